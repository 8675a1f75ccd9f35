/**
 * Small files of a download fetched many at a time: one remote command per batch (`cat` of all of them, then one hash
 * tool over all of them) instead of one stream, one channel and two remote processes per file. A checkpoint of
 * 100,000 small files (1 MB in all) took a stream per file before, about 12 files a second on the test host under load.
 *
 * What arrives is checked exactly as a stream's range is (download.ts): the bytes of each file are cut from the batch
 * by the size the walk gave, hashed here, and compared with the remote SHA-256 of that file. After the hashes come each
 * file's size and mtime as the walk prints them (remoteCommands.ts): a file still the version the walk listed, with
 * matching hashes, is proven and unchanged, and is put in place at once, without waiting for a listing of the whole
 * checkpoint after the transfer (100,000 files held until then were most of a pull's memory). A batch whose length,
 * hash or stat lines do not add up (a file changed size meanwhile, an unreadable file, one gone) is dropped as a
 * whole, and its files go through the ordinary streams, which say what went wrong.
 */
import { createHash } from 'node:crypto';
import { runCommand, type Executor, type RemoteCommand } from '../remote';
import type { TargetRef } from '../types';
import { noHashTool, parseMtime } from './remoteCommands';

/** Files up to this size are fetched in batches. */
export const SMALL_FILE_BYTES = 256 << 10;
/** A batch holds at most this many bytes of files… */
const BATCH_BYTES = 8 << 20;
/** …and this many bytes of paths (they travel in the exec request, whose packet is bounded). */
const BATCH_PATH_BYTES = 24 << 10;
const MARK = '\n--remote-runs-hashes--\n';

export interface SmallFile {
  remotePath: string;
  bytes: number;
}

/** One file of a batch as it arrived: its bytes, and the remote SHA-256 ('none' without a tool; undefined: not asked). */
export interface SmallPiece {
  data: Buffer;
  local: string;
  remote?: string;
  /** The file's size and mtime just after its bytes were read and hashed; undefined when it is no longer a regular file. */
  after?: { bytes: number; mtime: number };
}

/** Whether a file can travel in a batch: small, and an absolute path without a newline (one hash line per file). */
export function batchable(f: SmallFile): boolean {
  return f.bytes <= SMALL_FILE_BYTES && f.remotePath.startsWith('/') && !f.remotePath.includes('\n') && !f.remotePath.includes('\\');
}

/**
 * Cut `files` into batches within the byte and path budgets, in order, one batch when asked: only the batches being
 * fetched hold their files' paths (all of them at once were 100,000 remote paths, ~20 MB, for a batch of 300 in flight).
 */
export function* batches<T extends SmallFile>(files: Iterable<T>): Generator<T[]> {
  let cur: T[] = [];
  let bytes = 0;
  let names = 0;
  for (const f of files) {
    const n = Buffer.byteLength(f.remotePath) + 1;
    if (cur.length > 0 && (bytes + f.bytes > BATCH_BYTES || names + n > BATCH_PATH_BYTES)) {
      yield cur;
      cur = [];
      bytes = 0;
      names = 0;
    }
    cur.push(f);
    bytes += f.bytes;
    names += n;
  }
  if (cur.length) yield cur;
}

/**
 * The command of one batch: every file's bytes (one `cat`), the mark, then one line per file from the first SHA-256
 * tool the remote has (sha256sum, openssl, shasum; `none` without one), the mark again, then one line per file of its
 * size and mtime, the walk's own fields (GNU find's `%s %T@`, or `stat -L -c '%s %Y'` where find has no -printf, as
 * the walk falls back: the same host gives both in the same form), `x` for what is no longer a regular file. Paths are
 * positional parameters of `sh -c`. undefined per file: the batch did not add up (see the header).
 */
export function smallBatchCommand(files: SmallFile[], hash: boolean): RemoteCommand<(SmallPiece | undefined)[]> {
  const script =
    'cat -- "$@" || exit 3; printf "%s" "$RR_MARK"; ' +
    (hash
      ? 'if command -v sha256sum >/dev/null 2>&1; then sha256sum -b -- "$@"; ' +
        'elif command -v openssl >/dev/null 2>&1; then openssl dgst -sha256 -r "$@"; ' +
        'elif command -v shasum >/dev/null 2>&1; then shasum -a 256 -b -- "$@"; else echo none; fi'
      : 'true') +
    '; printf "%s" "$RR_MARK"; ' +
    'if find "$1" -maxdepth 0 -printf "" >/dev/null 2>&1; then find -L "$@" -maxdepth 0 \\( -type f -printf "%s\\t%T@\\n" -o -printf "x\\n" \\); ' +
    'else for f; do if [ -f "$f" ]; then s=$(stat -L -c "%s %Y" -- "$f") && printf "%s\\t%s\\n" "${s% *}" "${s#* }"; else echo x; fi; done; fi';
  const total = files.reduce((n, f) => n + f.bytes, 0);
  return {
    argv: ['sh', '-c', `RR_MARK='${MARK}'; ${script}`, 'sh', ...files.map((f) => f.remotePath)],
    describe: `Fetch ${files.length} small files`,
    maxOutputBytes: total + MARK.length + files.length * 200 + 4096,
    parse(result) {
      const none = files.map(() => undefined);
      const out = result.stdout;
      if (result.code !== 0 || result.truncated || out.length < total + MARK.length || out.subarray(total, total + MARK.length).toString('latin1') !== MARK) return none;
      const rest = out.subarray(total + MARK.length).toString('utf8');
      const cut = rest.indexOf(MARK);
      if (cut < 0) return none;
      let lines: string[] = [];
      if (hash) {
        const tail = rest.slice(0, cut);
        if (/^none\b/.test(tail)) throw noHashTool();
        lines = tail.split('\n').filter((l) => l !== '');
        if (lines.length !== files.length) return none;
      }
      const stats = rest.slice(cut + MARK.length).split('\n').filter((l) => l !== '');
      if (stats.length !== files.length) return none;
      const pieces: (SmallPiece | undefined)[] = [];
      let at = 0;
      for (const [i, f] of files.entries()) {
        const data = out.subarray(at, at + f.bytes);
        at += f.bytes;
        const local = createHash('sha256').update(data).digest('hex');
        const st = /^(\d+)\t([0-9.]+)$/.exec(stats[i]);
        if (!st && stats[i] !== 'x') return none;
        const after = st ? { bytes: Number(st[1]), mtime: parseMtime(st[2]) } : undefined;
        if (!hash) {
          pieces.push({ data, local, ...(after ? { after } : {}) });
          continue;
        }
        const m = /^\\?([0-9a-f]{64})\b/i.exec(lines[i]);
        if (!m) return none;
        pieces.push({ data, local, remote: m[1].toLowerCase(), ...(after ? { after } : {}) });
      }
      return pieces;
    },
  };
}

/** Run one batch through the target's prefix. */
export function fetchSmallBatch(executor: Executor, target: TargetRef, files: SmallFile[], hash: boolean, signal?: AbortSignal): Promise<(SmallPiece | undefined)[]> {
  return runCommand(executor, target, smallBatchCommand(files, hash), signal);
}
