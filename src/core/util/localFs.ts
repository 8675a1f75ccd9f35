/**
 * node:fs for local paths that hold remote names: the calls a pull makes (transfer/), each taking the path as this
 * program keeps it (a string whose bytes that are not UTF-8 are lone surrogates U+DC80–U+DCFF, nameBytes.ts) and
 * handing node:fs its exact bytes (fsPath). Node would encode such a string as UTF-8 with U+FFFD for every such
 * byte: `bad\xff.bin` and `bad\xfe.bin` would both be written as `bad\xef\xbf\xbd.bin`, one over the other.
 *
 * Names read back (readdir, readlink) are decoded the same way, and an error's `path` is the path as given (Node
 * would report the bytes decoded with U+FFFD), so the message names the file that failed.
 */
import { promises as fsp, createReadStream as nodeCreateReadStream, openSync as nodeOpenSync, unlinkSync as nodeUnlinkSync, type MakeDirectoryOptions, type RmOptions, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { decodeName, fsPath } from './nameBytes';

export type { FileHandle };

/** The rejection of a call on `p` (and `dest`), with the path as given. */
function named<T>(call: Promise<T>, p: string, dest?: string): Promise<T> {
  return call.catch((e: unknown) => {
    const err = e as NodeJS.ErrnoException & { dest?: string };
    if (err && typeof err === 'object') {
      if (typeof err.path === 'string' && err.path !== p) {
        err.message = err.message.split(`'${err.path}'`).join(`'${p}'`);
        err.path = p;
      }
      if (dest !== undefined && typeof err.dest === 'string' && err.dest !== dest) {
        err.message = err.message.split(`'${err.dest}'`).join(`'${dest}'`);
        err.dest = dest;
      }
    }
    throw e;
  });
}

/** A folder entry, its name decoded as remote names are. */
export interface LocalDirent {
  name: string;
  isDirectory(): boolean;
  isFile(): boolean;
  isSymbolicLink(): boolean;
}

export const localFs = {
  stat: (p: string): Promise<Stats> => named(fsp.stat(fsPath(p)), p),
  lstat: (p: string): Promise<Stats> => named(fsp.lstat(fsPath(p)), p),
  open: (p: string, flags?: string | number, mode?: number): Promise<FileHandle> => named(fsp.open(fsPath(p), flags, mode), p),
  rm: (p: string, options?: RmOptions): Promise<void> => named(fsp.rm(fsPath(p), options), p),
  unlink: (p: string): Promise<void> => named(fsp.unlink(fsPath(p)), p),
  rename: (from: string, to: string): Promise<void> => named(fsp.rename(fsPath(from), fsPath(to)), from, to),
  link: (existing: string, p: string): Promise<void> => named(fsp.link(fsPath(existing), fsPath(p)), existing, p),
  /** A symbolic link at `p` whose text is `target` (its bytes, as the remote link's). */
  symlink: (target: string, p: string): Promise<void> => named(fsp.symlink(fsPath(target), fsPath(p)), target, p),
  readlink: async (p: string): Promise<string> => decodeName(await named(fsp.readlink(fsPath(p), { encoding: 'buffer' }), p)),
  readFile: (p: string, encoding: 'utf8'): Promise<string> => named(fsp.readFile(fsPath(p), encoding), p),
  writeFile: (p: string, data: string | Uint8Array, options?: { mode?: number }): Promise<void> => named(fsp.writeFile(fsPath(p), data, options), p),
  mkdir: (p: string, options?: MakeDirectoryOptions): Promise<string | undefined> => named(fsp.mkdir(fsPath(p), options), p).then((made) => (made === undefined ? undefined : String(made))),
  utimes: (p: string, atime: Date | number, mtime: Date | number): Promise<void> => named(fsp.utimes(fsPath(p), atime, mtime), p),
  statfs: (p: string) => named(fsp.statfs(fsPath(p)), p),
  readdir: async (p: string, _options: { withFileTypes: true }): Promise<LocalDirent[]> =>
    (await named(fsp.readdir(fsPath(p), { withFileTypes: true, encoding: 'buffer' }), p)).map((d) => ({
      name: decodeName(d.name as unknown as Buffer),
      isDirectory: () => d.isDirectory(),
      isFile: () => d.isFile(),
      isSymbolicLink: () => d.isSymbolicLink(),
    })),
};

/** createReadStream of a local path holding remote names. */
export function createReadStream(p: string, options?: Parameters<typeof nodeCreateReadStream>[1]): ReturnType<typeof nodeCreateReadStream> {
  return nodeCreateReadStream(fsPath(p), options);
}

/** openSync of a local path holding remote names. */
export function openSync(p: string, flags: string | number): number {
  return nodeOpenSync(fsPath(p), flags);
}

/** unlinkSync of a local path holding remote names. */
export function unlinkSync(p: string): void {
  nodeUnlinkSync(fsPath(p));
}
