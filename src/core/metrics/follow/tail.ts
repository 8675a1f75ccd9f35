/**
 * Following a metrics log while a run writes it: a pure state machine over what the remote side reports, plus
 * the one command that reports it. Nothing here does I/O; the caller runs `tailReadCommand` through the runner
 * and feeds the result to `applyTailRead`.
 *
 * Each poll is one round trip: the command prints the file's size, mtime, inode and the hex of its first 64
 * bytes, then up to MAXBYTES new bytes from OFFSET. The remembered inode and head travel with it, so when the
 * file was replaced (a restarted run writing a fresh log) or truncated, the script itself reads from 0 instead
 * and the reply is usable at once. The client checks the same facts again (decideTail) and never trusts bytes
 * that do not follow what it already has.
 *
 * Replacement is detected by inode change, by the first 64 bytes changing, or by the size dropping below what
 * was read. A new file with the same inode, the same first 64 bytes and already longer than the old one is
 * indistinguishable from growth; that needs a logger rewriting identical headers in place and is accepted.
 */
import { gunzipSync } from 'node:zlib';
import type { RemoteCommand, ExecResult } from '../../remote';
import { commandFailed } from '../../remote';
import { RemoteRunsError } from '../../types';

/** How many leading bytes identify a file's content. */
export const TAIL_HEAD_BYTES = 64;
/** Default cap on bytes per round trip; a bigger backlog is read over several polls (`more`). */
export const DEFAULT_TAIL_MAX_BYTES = 8 * 1024 * 1024;
/**
 * Default for compressing reads (`gzip -1` on the remote side, for reads of at least this many bytes; 0: never).
 * Off: metrics text compresses about 5:1, which pays on a slow link, but on a fast one (measured on loopback,
 * 100 MB log) gzip on the remote and gunzip here cost more CPU than ssh2 saves on decrypting fewer bytes, and
 * opening took longer (1.7× the plain transfer instead of 1.2×). Callers on slow links pass a threshold.
 */
export const DEFAULT_TAIL_COMPRESS_ABOVE = 0;

/** `append` logs only grow; `whole` files (trainer_state.json) are rewritten in full. */
export type TailMode = 'append' | 'whole';

/** The facts a poll reports about the file. */
export interface TailStat {
  size: number;
  /** Modification time, ms since the epoch (fractional where the remote `find` reports it). */
  mtimeMs: number;
  /** Inode number as text; '' when unknown. */
  inode: string;
  /** Lowercase hex of the first min(size, 64) bytes; '' for an empty file or when unknown. */
  head: string;
  /** The remote's clock when it took this stat, ms since the epoch (whole seconds); absent when unknown. */
  remoteNowMs?: number;
}

/** What the follower remembers between polls. */
export interface TailState extends TailStat {
  /** Bytes of the file already handed to the parser. */
  offset: number;
}

export type TailDecision =
  | { kind: 'unchanged' }
  | { kind: 'grew'; from: number }
  | { kind: 'reread'; reason: 'first' | 'truncated' | 'replaced' | 'rewritten' };

/** Do two heads describe the same file? A head read while the file was shorter must be a prefix of the new one. */
export function headsMatch(known: string, now: string): boolean {
  return known === '' || now.startsWith(known);
}

/**
 * Compare the remembered state with a fresh stat:
 * - nothing remembered → reread (first);
 * - other inode → reread (replaced);
 * - smaller than before → reread (truncated);
 * - the known head no longer leads the file → reread (replaced);
 * - whole mode: size or mtime changed → reread (rewritten); a whole read still in progress continues (grew);
 * - append mode: bigger than what was read → grew from the offset; otherwise unchanged.
 */
export function decideTail(prev: TailState | undefined, stat: TailStat, mode: TailMode): TailDecision {
  if (!prev) return { kind: 'reread', reason: 'first' };
  if (prev.inode !== '' && stat.inode !== '' && prev.inode !== stat.inode) return { kind: 'reread', reason: 'replaced' };
  if (stat.size < prev.size || stat.size < prev.offset) return { kind: 'reread', reason: 'truncated' };
  if (!headsMatch(prev.head, stat.head)) return { kind: 'reread', reason: 'replaced' };
  if (mode === 'whole') {
    if (stat.size !== prev.size || stat.mtimeMs !== prev.mtimeMs) return { kind: 'reread', reason: 'rewritten' };
    return prev.offset < stat.size ? { kind: 'grew', from: prev.offset } : { kind: 'unchanged' };
  }
  return stat.size > prev.offset ? { kind: 'grew', from: prev.offset } : { kind: 'unchanged' };
}

/** What to ask the remote side for next. */
export interface TailRequest {
  offset: number;
  /** 0 asks for the stat only. */
  maxBytes: number;
  /** The remembered head and inode, so the script can fall back to offset 0 by itself. */
  expectHead: string;
  expectInode: string;
  /** Compress the data with gzip when at least this many bytes are to be sent (0: never). */
  compressAbove?: number;
}

/**
 * The next request. Append mode always reads from the offset. Whole mode asks for the stat only once the file
 * has been read completely (a trainer_state.json is not re-sent every poll), and reads from 0 otherwise.
 */
export function nextTailRequest(
  prev: TailState | undefined,
  mode: TailMode,
  maxBytes = DEFAULT_TAIL_MAX_BYTES,
  compressAbove = DEFAULT_TAIL_COMPRESS_ABOVE,
): TailRequest {
  if (!prev) return { offset: 0, maxBytes, expectHead: '', expectInode: '', compressAbove };
  const statOnly = mode === 'whole' && prev.offset >= prev.size;
  return { offset: prev.offset, maxBytes: statOnly ? 0 : maxBytes, expectHead: prev.head, expectInode: prev.inode, compressAbove };
}

/** What one poll returned. */
export type TailReadResult =
  | { status: 'ok'; stat: TailStat; from: number; data: Uint8Array; requestedBytes: number }
  | { status: 'missing' | 'permission-denied' | 'not-a-file' };

/** The outcome of one poll for the caller to act on. */
export interface TailStep {
  /** Remember this for the next poll. */
  state: TailState;
  decision: TailDecision;
  /**
   * Drop what was parsed so far and start a new parser before pushing `data` (the file was replaced, truncated,
   * or is a whole-file format being read again).
   */
  reset: boolean;
  /** Bytes to push into the parser, in order after what it already has. */
  data: Uint8Array;
  /** Whole mode: the file has now been read in full; call the parser's end(). */
  complete: boolean;
  /** More bytes are waiting (the read was capped, or must restart from 0): poll again now. */
  more: boolean;
}

const EMPTY = new Uint8Array(0);

/** Fold one successful poll into the state. */
export function applyTailRead(
  prev: TailState | undefined,
  result: Extract<TailReadResult, { status: 'ok' }>,
  mode: TailMode,
): TailStep {
  const { stat, from, data } = result;
  const decision = decideTail(prev, stat, mode);
  // Unless the file was replaced, the new head extends the known one (decideTail checked), so it is kept.
  const withStat = (offset: number): TailState => ({ ...stat, size: Math.max(stat.size, offset), offset });
  if (decision.kind === 'unchanged') {
    return { state: withStat(prev?.offset ?? 0), decision, reset: false, data: EMPTY, complete: false, more: false };
  }
  const expectedFrom = decision.kind === 'grew' ? decision.from : 0;
  const reset = decision.kind === 'reread';
  if (from !== expectedFrom || result.requestedBytes === 0) {
    // The bytes do not continue what we have (or none were asked for): take only the stat, ask again.
    const state = withStat(reset ? 0 : expectedFrom);
    return { state, decision, reset, data: EMPTY, complete: false, more: true };
  }
  const state = withStat(from + data.length);
  const complete = mode === 'whole' && state.offset >= state.size;
  const more = data.length > 0 && state.offset < stat.size;
  return { state, decision, reset, data, complete, more };
}

/**
 * `sh -c SCRIPT sh PATH OFFSET MAXBYTES EXPECT_HEAD EXPECT_INODE [GZIP_ABOVE]`. Output:
 *   `\n@rr-tail@1\n` (marker; rc-file noise before it is skipped)
 *   `ok SIZE MTIME INODE FROM HEADHEX ENC NOW\n` then the bytes from FROM (at most MAXBYTES of the file), or
 *   `missing\n` | `denied\n` | `notfile\n`
 * MTIME is seconds with a fraction from GNU find's %T@, whole seconds from busybox stat. FROM is OFFSET unless
 * the file is smaller than OFFSET, has another inode, or no longer starts with EXPECT_HEAD: then 0. ENC is `gz`
 * when the bytes are gzip-compressed (at least GZIP_ABOVE bytes to send, and a working `gzip -1`), else `-`. NOW is
 * the remote's `date +%s` (`-` when it has none): a log's age is MTIME against NOW, both on the remote's clock.
 */
export const TAIL_SCRIPT = String.raw`
p=$1; off=$2; max=$3; want_head=$4; want_ino=$5; gz_above=${'$'}{6:-0}
printf '\n@rr-tail@1\n'
case $p in /*) ;; *) p=./$p ;; esac
if [ ! -e "$p" ]; then
  # A file under a folder we may not enter is a permission problem, not a missing file.
  d=$p; st=missing
  while [ "$d" != / ] && [ "$d" != . ]; do
    d=${'$'}{d%/*}; [ -n "$d" ] || d=/
    if [ -e "$d" ]; then { [ -d "$d" ] && [ ! -x "$d" ]; } && st=denied; break; fi
  done
  printf '%s\n' "$st"; exit 0
fi
[ -f "$p" ] || { printf 'notfile\n'; exit 0; }
[ -r "$p" ] || { printf 'denied\n'; exit 0; }
st=$(find -L "$p" -maxdepth 0 -printf '%s %T@ %i' 2>/dev/null)
[ -n "$st" ] || st=$(stat -L -c '%s %Y %i' "$p" 2>/dev/null)
set -- $st
size=$1; mtime=$2; ino=$3
head=$(head -c 64 "$p" | od -An -v -tx1 | tr -d ' \n')
from=$off
[ "$size" -ge "$off" ] || from=0
[ -z "$want_ino" ] || [ "$want_ino" = "$ino" ] || from=0
case $head in "$want_head"*) ;; *) from=0 ;; esac
enc=-
# Some busybox builds have no compression levels: gzip is used only once it has shown it takes -1.
if [ "$max" -gt 0 ] && [ "$gz_above" -gt 0 ] && [ $((size - from)) -ge "$gz_above" ] && gzip -1 </dev/null >/dev/null 2>&1; then enc=gz; fi
now=$(date +%s 2>/dev/null)
printf 'ok %s %s %s %s %s %s %s\n' "$size" "$mtime" "$ino" "$from" "${'$'}{head:--}" "$enc" "${'$'}{now:--}"
if [ "$max" -gt 0 ]; then
  if [ "$enc" = gz ]; then tail -c +$((from + 1)) "$p" | head -c "$max" | gzip -1; else tail -c +$((from + 1)) "$p" | head -c "$max"; fi
fi
exit 0
`;

/** What the tail read prints before its status line (rc-file noise before it is skipped). */
export const TAIL_MARKER = Buffer.from('\n@rr-tail@1\n');

/** The poll command for one file. `path` is absolute inside the target. */
export function tailReadCommand(path: string, request: TailRequest): RemoteCommand<TailReadResult> {
  const describe = `read ${path} from byte ${request.offset}`;
  return {
    argv: [
      'sh',
      '-c',
      TAIL_SCRIPT,
      'sh',
      path,
      String(Math.max(0, Math.floor(request.offset))),
      String(Math.max(0, Math.floor(request.maxBytes))),
      request.expectHead,
      request.expectInode,
      String(Math.max(0, Math.floor(request.compressAbove ?? 0))),
    ],
    describe,
    // Room for the status line and any login-shell noise on top of the data.
    maxOutputBytes: request.maxBytes + 64 * 1024,
    parse: (result) => parseTailOutput(result, request, describe),
  };
}

/** Parse the poll command's output (see TAIL_SCRIPT for the format). */
export function parseTailOutput(result: ExecResult, request: TailRequest, describe: string): TailReadResult {
  if (result.code !== 0) throw commandFailed(describe, result);
  const out = result.stdout;
  const at = out.indexOf(TAIL_MARKER);
  if (at < 0) {
    throw new RemoteRunsError('protocol', `${describe}: the reply did not start with its marker; it began with ${JSON.stringify(out.subarray(0, 60).toString('utf8'))}`);
  }
  const lineStart = at + TAIL_MARKER.length;
  const lineEnd = out.indexOf(0x0a, lineStart);
  if (lineEnd < 0) throw new RemoteRunsError('protocol', `${describe}: the reply ended before its status line`);
  const fields = out.subarray(lineStart, lineEnd).toString('utf8').split(' ');
  switch (fields[0]) {
    case 'missing':
      return { status: 'missing' };
    case 'denied':
      return { status: 'permission-denied' };
    case 'notfile':
      return { status: 'not-a-file' };
    case 'ok':
      break;
    default:
      throw new RemoteRunsError('protocol', `${describe}: unknown status ${JSON.stringify(fields[0].slice(0, 40))}`);
  }
  const [, sizeText, mtimeText, inode, fromText, headText, encoding = '-', nowText = '-'] = fields;
  const size = Number(sizeText);
  const mtime = Number(mtimeText);
  const from = Number(fromText);
  if (
    fields.length < 6 ||
    fields.length > 8 ||
    !Number.isSafeInteger(size) ||
    !Number.isFinite(mtime) ||
    !Number.isSafeInteger(from) ||
    (encoding !== '-' && encoding !== 'gz')
  ) {
    throw new RemoteRunsError('protocol', `${describe}: bad status line ${JSON.stringify(fields.join(' ').slice(0, 120))}`);
  }
  // A view, not a copy: the reply buffer is ours alone, and the parser copies what it keeps of it.
  const payload = out.subarray(lineEnd + 1);
  return {
    status: 'ok',
    stat: { size, mtimeMs: mtime * 1000, inode, head: headText === '-' ? '' : headText, ...(/^\d+$/.test(nowText) ? { remoteNowMs: Number(nowText) * 1000 } : {}) },
    from,
    data: encoding === 'gz' ? gunzipReply(payload, request.maxBytes, describe) : new Uint8Array(payload.buffer, payload.byteOffset, payload.length),
    requestedBytes: request.maxBytes,
  };
}

/** The file's bytes from a compressed reply; never more than were asked for (a reply is not trusted to be small). */
function gunzipReply(payload: Buffer, maxBytes: number, describe: string): Uint8Array {
  let data: Buffer;
  try {
    data = gunzipSync(payload, { maxOutputLength: Math.max(1, maxBytes) });
  } catch (e) {
    const why = e instanceof RangeError ? `more than the ${maxBytes} bytes asked for` : e instanceof Error ? e.message : String(e);
    throw new RemoteRunsError('protocol', `${describe}: the compressed reply could not be read (${why})`);
  }
  return new Uint8Array(data.buffer, data.byteOffset, data.length);
}
