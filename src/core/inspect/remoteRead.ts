/**
 * Reading what inspect needs of a checkpoint's files on the remote side: ONE command for all of a checkpoint's
 * files (a POSIX sh script, no Python on the remote), run through the target's prefix like every other command
 * (remote.ts runCommand). The script text is a constant; paths and what to read of each travel as positional
 * arguments (`sh -c SCRIPT sh SPEC PATH SPEC PATH…`), quoted once by the runner.
 *
 * What is read of each file (SPEC):
 * - `st:CAP`        safetensors: the 8-byte header length (read with od), then exactly the header it states when
 *                   that is at most CAP (else the 8 bytes only: the reader refuses the length, saying so);
 * - `whole:CAP`     the whole file up to CAP bytes (a shard index, DCP's .metadata);
 * - `ht:HEAD:TAIL`  the first HEAD and the last TAIL bytes (a torch zip: torch writes data.pkl as the archive's
 *                   first entry, so the head usually holds it, and the end record and central directory are in the
 *                   tail);
 * - `r:FROM:TO,…`   exact ranges, for a second command when the pickle or the central directory was not wholly
 *                   inside the head or tail (a large optimizer state; an archive of thousands of entries): the
 *                   readers say exactly which bytes are missing (InspectError need-more), so only those are read.
 * Output, NUL-separated (parsed by parseInspectOutput):
 *   `\0@rr-inspect@1\0`                             magic (rc-file noise before it is skipped)
 *   `F\0<i>\0<status>\0<size>\0<mtime>\0`           a file: ok | missing | denied | notfile
 *   `C\0<offset>\0<length>\0<length bytes>`         a chunk of it (offsets aligned down to 4096 for dd)
 *   `S\0<size>\0<mtime>\0`                          stat again after reading: a file that changed meanwhile is told
 *   `Z\0`                                           end
 * Chunks are read with `dd bs=4096 skip=…` (a seek, so a 3 GB file costs what is read) and padded with zeros to
 * their stated length, so a file that shrank while being read cannot break the framing (its S record tells).
 */
import { RemoteRunsError, linkOutsideError, type TargetRef } from '../types';
import { runCommand, commandFailed, type Executor, type RemoteCommand } from '../remote';
import { InspectError } from './errors';
import { Pieces, type Piece } from './pieces';
import { inspectFilesAsync, isInspectable, type FileBytes } from './read';
import { MAX_SAFETENSORS_HEADER } from './safetensors';
import type { Inspection } from './types';

export const INSPECT_MAGIC = Buffer.from('\0@rr-inspect@1\0', 'latin1');

/** Head and tail read of a torch archive in the first command: a few hundred KB per file at most. */
export const TORCH_HEAD_BYTES = 128 * 1024;
export const TORCH_TAIL_BYTES = 64 * 1024;
/** Whole-file reads (shard index, .metadata) stop here. */
export const WHOLE_CAP = 16 * 1024 * 1024;
/** Rounds of reading before giving up on a header that keeps asking for more. */
const MAX_ROUNDS = 3;

const P = '${';

export const INSPECT_SCRIPT = String.raw`
printf '\0@rr-inspect@1\0'
# stat of $1 as "size mtime" (mtime with fractions where stat gives them, as find -printf %T@ does for the listing).
st() { stat -L -c '%s %.9Y' -- "$1" 2>/dev/null || stat -L -c '%s %Y' -- "$1" 2>/dev/null; }
# chunk FILE FROM TO: bytes [FROM aligned down to 4096, TO), padded with zeros to exactly that length.
chunk() {
  a=$(($2 / 4096 * 4096)); n=$(($3 - a))
  [ "$n" -gt 0 ] || return 0
  c=$(((n + 4095) / 4096))
  printf 'C\0%s\0%s\0' "$a" "$n"
  { dd if="$1" bs=4096 skip=$((a / 4096)) count="$c" 2>/dev/null; dd if=/dev/zero bs=4096 count="$c" 2>/dev/null; } | head -c "$n"
}
min() { if [ "$1" -lt "$2" ]; then echo "$1"; else echo "$2"; fi; }
# stlen FILE: the safetensors header length its first 8 bytes state, from one decimal per byte (od -tu1: no
# byte-order question); "big" when a high byte is set (2^32 and more: refused by the reader anyway).
stlen() {
  set -- $(od -An -v -tu1 -N8 -- "$1")
  [ $# -eq 8 ] || { echo short; return; }
  if [ "$5$6$7$8" = 0000 ]; then echo $(($1 + $2 * 256 + $3 * 65536 + $4 * 16777216)); else echo big; fi
}
i=0
while [ $# -ge 2 ]; do
  spec=$1; f=$2; shift 2
  s=
  if [ ! -e "$f" ]; then status=missing
  elif [ ! -f "$f" ]; then status=notfile
  elif [ ! -r "$f" ]; then status=denied
  else s=$(st "$f"); if [ -n "$s" ]; then status=ok; else status=missing; fi
  fi
  if [ "$status" != ok ]; then printf 'F\0%s\0%s\0\0\0' "$i" "$status"; i=$((i + 1)); continue; fi
  size=${P}s%% *}; mtime=${P}s#* }
  printf 'F\0%s\0ok\0%s\0%s\0' "$i" "$size" "$mtime"
  case $spec in
    st:*)
      n=$(stlen "$f")
      case $n in
        *[!0-9]*|'') chunk "$f" 0 "$(min 8 "$size")" ;;
        *) if [ "$n" -le "${P}spec#st:}" ]; then chunk "$f" 0 "$(min $((8 + n)) "$size")"; else chunk "$f" 0 8; fi ;;
      esac ;;
    whole:*) chunk "$f" 0 "$(min "${P}spec#whole:}" "$size")" ;;
    ht:*)
      h=${P}spec#ht:}; t=${P}h#*:}; h=${P}h%%:*}
      h=$(min "$h" "$size")
      chunk "$f" 0 "$h"
      from=$((size - t)); [ "$from" -gt "$h" ] || from=$h
      [ "$from" -lt "$size" ] && chunk "$f" "$from" "$size" ;;
    r:*)
      # Only digits, colons and commas reach here (built by readFilesCommand); anything else is skipped.
      for r in $(echo "${P}spec#r:}" | tr , ' '); do
        a=${P}r%%:*}; b=${P}r#*:}
        case $a$b in *[!0-9]*|'') continue ;; esac
        b=$(min "$b" "$size"); [ "$a" -lt "$b" ] && chunk "$f" "$a" "$b"
      done ;;
  esac
  s=$(st "$f")
  printf 'S\0%s\0%s\0' "${P}s%% *}" "${P}s#* }"
  i=$((i + 1))
done
printf 'Z\0'
`;

/** What to read of one file. */
export type ReadSpec = { kind: 'safetensors' } | { kind: 'whole' } | { kind: 'head-tail' } | { kind: 'ranges'; ranges: { from: number; to: number }[] };

export interface FileRead {
  status: 'ok' | 'missing' | 'denied' | 'notfile';
  size: number;
  mtime: number;
  pieces: Piece[];
  /** The file's size or mtime differed after reading: it was being written. */
  changed?: { size: number; mtime: number };
}

function specText(s: ReadSpec): string {
  switch (s.kind) {
    case 'safetensors':
      return `st:${MAX_SAFETENSORS_HEADER}`;
    case 'whole':
      return `whole:${WHOLE_CAP}`;
    case 'head-tail':
      return `ht:${TORCH_HEAD_BYTES}:${TORCH_TAIL_BYTES}`;
    case 'ranges':
      return `r:${s.ranges.map((r) => `${Math.max(0, Math.floor(r.from))}:${Math.max(0, Math.ceil(r.to))}`).join(',')}`;
  }
}

/** The one command that reads `specs` of `paths`. */
export function readFilesCommand(files: { path: string; spec: ReadSpec }[]): RemoteCommand<{ files: FileRead[]; bytes: number }> {
  const argv = ['sh', '-c', INSPECT_SCRIPT, 'sh'];
  for (const f of files) argv.push(specText(f.spec), f.path);
  const describe = `read checkpoint headers of ${files.length === 1 ? files[0].path : `${files.length} files`}`;
  return {
    argv,
    describe,
    // Whole-file reads are capped at 16 MB and header reads at 100 MB: far above any normal checkpoint's.
    maxOutputBytes: 256 * 1024 * 1024,
    parse: (result) => {
      if (result.code !== 0) throw commandFailed(describe, result);
      return { files: parseInspectOutput(result.stdout, files.length, describe), bytes: result.stdout.length };
    },
  };
}

/** Parse the script's output. Total: anything else is a RemoteRunsError('protocol') saying where. */
export function parseInspectOutput(out: Buffer, count: number, describe = 'inspect read'): FileRead[] {
  const start = out.indexOf(INSPECT_MAGIC);
  const bad = (why: string): RemoteRunsError => new RemoteRunsError('protocol', `${describe}: unexpected output (${why})`);
  if (start < 0) throw bad('no start marker');
  let p = start + INSPECT_MAGIC.length;
  const field = (): string => {
    const z = out.indexOf(0, p);
    if (z < 0) throw bad(`cut short at byte ${p}`);
    const s = out.subarray(p, z).toString('utf8');
    p = z + 1;
    return s;
  };
  const num = (s: string, what: string): number => {
    const v = Number(s);
    if (s === '' || !Number.isFinite(v) || v < 0) throw bad(`${what} ${JSON.stringify(s.slice(0, 20))}`);
    return v;
  };
  const files: FileRead[] = [];
  let cur: FileRead | undefined;
  for (;;) {
    const tag = field();
    if (tag === 'Z') break;
    if (tag === 'F') {
      const i = num(field(), 'file index');
      const status = field();
      const size = field();
      const mtime = field();
      if (i !== files.length) throw bad(`file ${i} where ${files.length} was expected`);
      if (status !== 'ok' && status !== 'missing' && status !== 'denied' && status !== 'notfile') throw bad(`status ${JSON.stringify(status)}`);
      cur = status === 'ok' ? { status, size: num(size, 'size'), mtime: Math.round(num(mtime, 'mtime') * 1000), pieces: [] } : { status, size: 0, mtime: 0, pieces: [] };
      files.push(cur);
    } else if (tag === 'C') {
      if (!cur) throw bad('a chunk before any file');
      const offset = num(field(), 'chunk offset');
      const length = num(field(), 'chunk length');
      if (p + length > out.length) throw bad(`a chunk of ${length} bytes cut short`);
      cur.pieces.push({ offset, data: out.subarray(p, p + length) });
      p += length;
    } else if (tag === 'S') {
      if (!cur) throw bad('a stat before any file');
      const size = field();
      const mtime = field();
      const s = size === '' ? -1 : num(size, 'size');
      const m = mtime === '' ? -1 : Math.round(num(mtime, 'mtime') * 1000);
      if (s !== cur.size || m !== cur.mtime) cur.changed = { size: s, mtime: m };
    } else throw bad(`record ${JSON.stringify(tag.slice(0, 10))}`);
  }
  if (files.length !== count) throw bad(`${files.length} files reported of ${count}`);
  return files;
}

/** A file of a checkpoint as the listing gave it. */
export interface ListedFile {
  /** Relative to the checkpoint (a flat file: its own name). */
  name: string;
  /** Absolute remote path inside the target. */
  path: string;
  bytes: number;
  mtime: number;
}

export interface RemoteInspection {
  inspection: Inspection;
  /** Remote commands this inspection ran (0: every file came from the cache). */
  commands: number;
  /** Bytes the remote sent (all commands). */
  bytesRead: number;
}

/**
 * What was read of each file, by (where, path, size, mtime): a file that did not change is not read again. `where`
 * names the host and target (the same path in two containers is two files).
 */
export class InspectCache {
  private readonly entries = new Map<string, Pieces>();
  constructor(private readonly maxEntries = 2000) {}
  private key(where: string, f: { path: string; bytes: number; mtime: number }): string {
    return `${where}\0${f.path}\0${f.bytes}\0${f.mtime}`;
  }
  get(where: string, f: ListedFile): Pieces | undefined {
    return this.entries.get(this.key(where, f));
  }
  set(where: string, f: ListedFile, pieces: Pieces): void {
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(this.key(where, f), pieces);
  }
}

function specFor(name: string): ReadSpec {
  const base = name.split('/').pop() ?? name;
  if (base.endsWith('.safetensors')) return { kind: 'safetensors' };
  if (base === '.metadata' || base.endsWith('.json')) return { kind: 'whole' };
  return { kind: 'head-tail' };
}

/**
 * Inspect one checkpoint's files on a target: one remote command for all of them (a second only when a header lies
 * outside what the first read), or none when every file is cached under the same (path, size, mtime).
 */
export async function inspectRemote(
  executor: Executor,
  target: TargetRef,
  listed: ListedFile[],
  options: { cache?: InspectCache; /** The host's name, for the cache's key. */ host?: string; signal?: AbortSignal } = {},
): Promise<RemoteInspection> {
  const cache = options.cache;
  const where = `${options.host ?? ''}/${target.kind}:${target.id}`;
  const have = new Map<string, { pieces?: Pieces; unread?: string; size: number }>();
  const toRead: ListedFile[] = [];
  for (const f of listed) {
    if (!isInspectable(f.name)) {
      have.set(f.name, { size: f.bytes, unread: /\.distcp$/.test(f.name) ? 'a torch.distributed.checkpoint shard: its tensors are listed by .metadata' : 'not a file inspect reads' });
      continue;
    }
    const cached = cache?.get(where, f);
    if (cached) have.set(f.name, { pieces: cached, size: cached.size });
    else toRead.push(f);
  }
  let commands = 0;
  let bytesRead = 0;
  const read = async (reqs: { file: ListedFile; spec: ReadSpec }[]): Promise<FileRead[]> => {
    commands++;
    const out = await runCommand(executor, target, readFilesCommand(reqs.map((r) => ({ path: r.file.path, spec: r.spec }))), options.signal);
    bytesRead += out.bytes;
    return out.files;
  };
  const changed = new Set<string>();
  if (toRead.length) {
    const results = await read(toRead.map((file) => ({ file, spec: specFor(file.name) })));
    results.forEach((r, i) => {
      const f = toRead[i];
      if (r.status !== 'ok') {
        have.set(f.name, { size: f.bytes, unread: r.status === 'missing' ? 'listed, but gone when read' : r.status === 'denied' ? 'permission denied' : 'not a regular file' });
        return;
      }
      if (r.changed) changed.add(f.name);
      have.set(f.name, { pieces: new Pieces(r.size, r.pieces), size: r.size });
    });
  }
  const files = (): FileBytes[] => listed.map((f) => ({ name: f.name, ...have.get(f.name)! }));
  let outcome = await inspectFilesAsync(files(), {}, options.signal);
  for (let round = 1; outcome.needMore.length && round < MAX_ROUNDS; round++) {
    const byName = new Map<string, { from: number; to: number }[]>();
    for (const n of outcome.needMore) byName.set(n.name, [...(byName.get(n.name) ?? []), { from: n.from, to: n.to }]);
    const reqs = [...byName].map(([name, ranges]) => ({ file: listed.find((f) => f.name === name)!, spec: { kind: 'ranges', ranges } as ReadSpec }));
    const results = await read(reqs);
    results.forEach((r, i) => {
      const name = reqs[i].file.name;
      const h = have.get(name)!;
      if (r.status !== 'ok' || !h.pieces) return;
      if (r.size !== h.pieces.size) changed.add(name);
      let pieces = h.pieces;
      for (const piece of r.pieces) pieces = pieces.with(piece);
      h.pieces = pieces;
    });
    outcome = await inspectFilesAsync(files(), {}, options.signal);
  }
  const ins = outcome.inspection;
  for (const n of outcome.needMore) {
    const f = ins.files.find((x) => x.name === n.name);
    if (f) f.problem = { code: 'too-large', message: `its header still lay outside what ${MAX_ROUNDS} reads fetched (bytes ${n.from}..${n.to}): not read further` };
  }
  for (const name of changed) {
    const f = ins.files.find((x) => x.name === name);
    if (f) {
      f.incomplete ??= 'changed while it was read: still being written';
      ins.incomplete.push(`${name} changed while it was read: still being written`);
    }
  }
  // Cache only what was read whole and unchanged, under the listing's own (size, mtime) when the read agreed with it.
  if (cache) {
    for (const f of listed) {
      const h = have.get(f.name);
      if (h?.pieces && !changed.has(f.name) && h.pieces.size === f.bytes && !outcome.needMore.some((n) => n.name === f.name)) cache.set(where, f, h.pieces);
    }
  }
  return { inspection: ins, commands, bytesRead };
}

export { InspectError };

/**
 * The files of a listed checkpoint, as inspect reads them: a flat file by its own name, a folder's by theirs. These
 * are what the listing's walk found (bounded, never through a link to a folder: discovery/listScript.ts); a checkpoint
 * that is itself a link out of its folder has none, and is refused with `bad-address` as a pull refuses it.
 */
export function listedFilesOf(checkpoint: { path: string; isDir: boolean; bytes: number; mtime: number; files: { name: string; path: string; bytes: number; mtime: number }[]; link?: string; linkOutside?: true }): ListedFile[] {
  if (checkpoint.linkOutside) throw linkOutsideError(checkpoint, 'inspect');
  if (!checkpoint.isDir && checkpoint.files.length === 0) {
    const name = checkpoint.path.split('/').pop() || checkpoint.path;
    return [{ name, path: checkpoint.path, bytes: checkpoint.bytes, mtime: checkpoint.mtime }];
  }
  return checkpoint.files.map((f) => ({ name: f.name, path: f.path, bytes: f.bytes, mtime: f.mtime }));
}
