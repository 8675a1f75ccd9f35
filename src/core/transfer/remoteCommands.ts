/**
 * The remote commands of a download, as values: list a checkpoint's files with size and mtime, stream a byte
 * range, hash a file. All run inside the target through `runCommand`/`wrapForTarget`, arguments passed as
 * positional parameters of `sh -c` so no remote name is ever parsed by a shell.
 */
import * as path from 'node:path';
import { commandFailed, firstStderrLine, type RemoteCommand } from '../remote';
import { RemoteRunsError, type SkipReason, type SkippedEntry } from '../types';
import { decodeFields } from '../util/nameBytes';

export interface RemoteFileStat {
  /** Relative to the checkpoint path ('' for a flat file, which is its own root). */
  relative: string;
  bytes: number;
  /** ms since the epoch. */
  mtime: number;
  /** The entry is a symbolic link with this text (its size and mtime are its target's). */
  link?: string;
}

export type { SkipReason, SkippedEntry } from '../types';

/** What a walk of a checkpoint found: the files to fetch and what is left out. */
export interface RemoteWalk {
  files: RemoteFileStat[];
  skipped: SkippedEntry[];
  /** Folder links of the checkpoint that stay inside it (relative, text): they arrive as links, never walked twice. */
  dirLinks: { relative: string; link: string }[];
}

/** The walk's output is cut here (64 MiB of records: about a million files); a longer one is refused, never half-planned. */
export const WALK_BUDGET_BYTES = 64 << 20;

/**
 * Every file under a checkpoint (or the file itself), with its size and mtime; links to files are followed wherever
 * they lead (checkpoints of HF caches are links into a blob store), links to folders never are: a walk stays inside
 * what it walks (a link `up -> ../../..` or to `/` would otherwise walk the whole remote filesystem). One command:
 *
 * - `R text\0 Z\0`: the checkpoint itself is a link to a folder whose text is absolute or climbs out with `..`:
 *   nothing is walked (the plan refuses it).
 * - `F size \t mtime \t relative \0`: a regular file (followed through links). GNU find -L, with `-xtype l` true
 *   for a link (find(1): "if the -L option has been given, true if c is `l`"), so `-xtype l -type d` is a link to a
 *   folder, printed as `D relative \0` and pruned.
 * - `S type \t relative \0`: anything else (find's %y after following: p, s, c, b, l for a link to nothing).
 * - The physical walk is `find -H`: the checkpoint itself may be a link (`latest -> checkpoint-500`), followed.
 * - `E status \0`: find's exit status (a loop is an error on find's stderr, and the entry is not printed).
 * - `L type relative \0 text \0`: each link as it is, from a walk that follows none (%Y: the followed type, L for a
 *   loop, N for nothing there).
 * - `Z\0`: the end. The whole is cut at WALK_BUDGET_BYTES by `head -c`, which stops find (SIGPIPE): a missing `Z` is a
 *   walk too large to plan.
 *
 * GNU find prints the records itself (-printf). Without -printf (BusyBox find: `find: unrecognized: -printf`, as on
 * Alpine) the F and L records come from `stat -L -c '%s %Y'` per file and `readlink` per link, in loops `find -exec`
 * feeds (slower: a process per file; whole-second mtimes). That walk cannot tell special files or folder links apart:
 * it follows links as BusyBox's `find -L` does, bounded by the same budget.
 */
/** `${` cannot be written inside String.raw; the script's parameter expansions interpolate it. */
const P = '${';
const STAT_SCRIPT = String.raw`[ -e "$1" ] || [ -L "$1" ] || { printf "%s: No such file or directory\n" "$1" >&2; exit 2; }
if [ -L "$1" ] && [ -d "$1" ]; then t=$(readlink "$1"; echo .); t=${P}t%?.}; case "/$t/" in //*|*/../*) printf "R%s\0Z\0" "$t"; exit 0 ;; esac; fi
if find "$1" -maxdepth 0 -printf "" >/dev/null 2>&1; then
  { if [ -d "$1" ]; then
    find -L "$1" -mindepth 1 -xtype l \( -type d -printf "D%P\0" -prune -o -type f -printf "F%s\t%T@\t%P\0" -o -printf "S%y\t%P\0" \) -o -type f -printf "F%s\t%T@\t%P\0" -o -type d -o -printf "S%y\t%P\0"; printf "E%s\0" $?
    find -H "$1" -mindepth 1 -type l -printf "L%Y%P\0%l\0" 2>/dev/null
  else find -L "$1" -maxdepth 0 -type f -printf "F%s\t%T@\t\0" -o -printf "S%y\t\0"; printf "E%s\0" $?; fi; printf "Z\0"; } | head -c ${String(WALK_BUDGET_BYTES)}
  exit
fi
files='for f; do if [ "$f" = "$0" ]; then r=; else r=${P}f#"$0"/}; fi; s=$(stat -L -c "%s %Y" -- "$f") || exit; printf "F%s\t%s\t%s\0" "${P}s% *}" "${P}s#* }" "$r"; done'
links='for f; do r=${P}f#"$0"/}; t=$(readlink -- "$f") || continue; if [ -d "$f" ]; then y=d; elif [ -e "$f" ]; then y=f; else y=N; fi; printf "L%s%s\0%s\0" "$y" "$r" "$t"; done'
{ find -L "$1" -type f -exec sh -c "$files" "$1" {} +; printf "E%s\0" $?; [ -d "$1" ] && find "$1" -type l -exec sh -c "$links" "$1" {} + 2>/dev/null; printf "Z\0"; } | head -c ${String(WALK_BUDGET_BYTES)}`;

export function statCheckpointCommand(checkpointPath: string): RemoteCommand<RemoteWalk> {
  return {
    argv: ['sh', '-c', STAT_SCRIPT, 'sh', checkpointPath],
    describe: `List files of ${checkpointPath}`,
    parse(result) {
      if (result.code !== 0) {
        const line = firstStderrLine(result);
        if (/No such file or directory/.test(line)) throw new RemoteRunsError('path-missing', `${checkpointPath} no longer exists on the remote side`, { path: checkpointPath });
        if (/Permission denied/.test(line)) throw new RemoteRunsError('permission-denied', `Cannot read ${checkpointPath}: ${line}`, { path: checkpointPath });
        throw commandFailed(`Listing the files of ${checkpointPath}`, result);
      }
      const walk = parseWalk(result.stdout, checkpointPath, true);
      if (walk.status !== 0) {
        // A loop is find's error for that entry alone (it is named by its L record and skipped); any other is the walk's.
        const errors = result.stderr.toString('utf8').split('\n').filter((l) => l.trim() !== '' && !/Too many levels of symbolic links/.test(l));
        if (errors.some((l) => /No such file or directory/.test(l)) && walk.files.length === 0) throw new RemoteRunsError('path-missing', `${checkpointPath} no longer exists on the remote side`, { path: checkpointPath });
        if (errors.some((l) => /Permission denied/.test(l))) throw new RemoteRunsError('permission-denied', `Cannot read ${checkpointPath}: ${errors.find((l) => /Permission denied/.test(l))}`, { path: checkpointPath });
        if (errors.length > 0) throw commandFailed(`Listing the files of ${checkpointPath}`, { ...result, code: walk.status });
      }
      return { files: walk.files, skipped: walk.skipped, dirLinks: walk.dirLinks };
    },
  };
}

/** What a type letter of find's %y (after following links) that is not a file or folder makes of an entry. */
export const SKIP_TYPES: Record<string, SkipReason> = { p: 'fifo', s: 'socket', c: 'char-device', b: 'block-device', l: 'broken-link' };

/** An mtime as the walk prints it (find's `%T@`, or stat's whole seconds) in ms, rounded to the microsecond. */
export function parseMtime(text: string): number {
  return Math.round(Number(text) * 1e6) / 1e3;
}

/**
 * Parse the records of statCheckpointCommand (relative paths and link texts may hold tabs and newlines). Records
 * without a mark (`size \t mtime \t relative`) are read as files too. `checkpointPath` names the checkpoint in errors;
 * `requireEnd`: output without its `Z` end was cut by the budget (`too-large`).
 */
export function parseWalk(stdout: Buffer, checkpointPath = 'the checkpoint', requireEnd = false): RemoteWalk & { status: number } {
  const out: RemoteFileStat[] = [];
  const special = new Map<string, SkipReason>();
  const dirs: string[] = [];
  const links = new Map<string, { type: string; text: string }>();
  let status = 0;
  let ended = false;
  // Names are bytes: a byte that is not UTF-8 stays itself (nameBytes.ts), so the name asked for later is the remote's.
  // Read one field at a time (a split held every field of 100,000 files at once).
  const text = decodeFields(stdout);
  let pos = 0;
  const nextField = (): string | undefined => {
    if (pos > text.length) return undefined;
    const end = text.indexOf('\0', pos);
    const field = text.slice(pos, end < 0 ? text.length : end);
    pos = end < 0 ? text.length + 1 : end + 1;
    return field;
  };
  for (let rec = nextField(); rec !== undefined; rec = nextField()) {
    if (rec === '') continue;
    if (rec === 'Z') {
      ended = true;
      continue;
    }
    if (rec.startsWith('R')) {
      throw new RemoteRunsError('bad-address', `${checkpointPath} is a symbolic link to ${JSON.stringify(rec.slice(1))}, a folder outside the one it is in; remote-runs does not follow it (pull the folder it names by its own address)`, { path: checkpointPath, link: rec.slice(1) });
    }
    if (rec.startsWith('E')) {
      status = Number(rec.slice(1)) || 0;
      continue;
    }
    if (rec.startsWith('D')) {
      dirs.push(rec.slice(1));
      continue;
    }
    if (rec.startsWith('S')) {
      const t = rec.indexOf('\t');
      if (t < 0) throw new RemoteRunsError('protocol', `Unexpected entry record from find: ${JSON.stringify(rec.slice(0, 80))}`);
      special.set(rec.slice(t + 1), SKIP_TYPES[rec.slice(1, t)] ?? 'other');
      continue;
    }
    if (rec.startsWith('L')) {
      const linkText = nextField();
      if (linkText === undefined || linkText === '' || rec.length < 2) throw new RemoteRunsError('protocol', `Unexpected link record from find: ${JSON.stringify(rec.slice(0, 80))}`);
      links.set(rec.slice(2), { type: rec[1], text: linkText });
      continue;
    }
    if (rec.startsWith('F')) rec = rec.slice(1);
    const t1 = rec.indexOf('\t');
    const t2 = rec.indexOf('\t', t1 + 1);
    if (t1 < 0 || t2 < 0) throw new RemoteRunsError('protocol', `Unexpected file record from find: ${JSON.stringify(rec.slice(0, 80))}`);
    const bytes = Number(rec.slice(0, t1));
    const mtime = parseMtime(rec.slice(t1 + 1, t2));
    if (!Number.isSafeInteger(bytes) || !Number.isFinite(mtime)) throw new RemoteRunsError('protocol', `Unexpected file record from find: ${JSON.stringify(rec.slice(0, 80))}`);
    // A copy, not a slice: a slice keeps the whole listing alive (4.8 MB of text for 100,000 files) as long as the plan.
    out.push({ relative: ownCopy(rec.slice(t2 + 1)), bytes, mtime });
  }
  if (requireEnd && !ended) {
    throw new RemoteRunsError('too-large', `The file list of ${checkpointPath} passed ${WALK_BUDGET_BYTES >> 20} MiB (about a million files) and was cut; nothing was pulled`, { path: checkpointPath });
  }
  for (const f of out) {
    const l = links.get(f.relative);
    if (l !== undefined && f.relative !== '') f.link = l.text;
  }
  const skipped: SkippedEntry[] = [];
  for (const [relative, why] of special) skipped.push({ relative, why, ...(links.has(relative) ? { link: links.get(relative)!.text } : {}) });
  // A loop is not printed by the walk that follows links (find reports ELOOP instead): its L record names it.
  // (The set of names only when there are links to look up: 100,000 files made it a 4 MB set of nothing.)
  const seen = links.size > 0 ? new Set([...out.map((f) => f.relative), ...special.keys(), ...dirs]) : new Set<string>();
  for (const [relative, l] of links) {
    if (seen.has(relative)) continue;
    if (l.type === 'L') skipped.push({ relative, why: 'link-loop', link: l.text });
    else if (l.type === 'N') skipped.push({ relative, why: 'broken-link', link: l.text });
  }
  const dirLinks: { relative: string; link: string }[] = [];
  for (const relative of dirs) {
    const text = links.get(relative)?.text ?? '';
    if (dirLinkWithin(relative, text)) dirLinks.push({ relative, link: text });
    else skipped.push({ relative, why: 'dir-link-outside', link: text });
  }
  skipped.sort((a, b) => (a.relative < b.relative ? -1 : a.relative > b.relative ? 1 : 0));
  return { files: out, skipped, dirLinks, status };
}

/**
 * A string of its own: V8 keeps a substring of 13 characters or more as a view of the string it was cut from
 * (a "sliced string"), so each name kept from a listing would keep the whole listing's text alive. JSON's round trip
 * makes a new string and keeps every code unit (a lone surrogate too).
 */
function ownCopy(s: string): string {
  return s.length < 13 ? s : (JSON.parse(JSON.stringify(s)) as string);
}

/** The files of parseWalk alone (records of older callers and tests). */
export function parseStatRecords(stdout: Buffer): RemoteFileStat[] {
  return parseWalk(stdout).files;
}

/**
 * Whether a link to a folder stays inside the checkpoint: relative, and resolving below the checkpoint without
 * being its own ancestor (`self -> .` or `sub/back -> ..` would make the local copy a loop too).
 */
export function dirLinkWithin(relative: string, text: string): boolean {
  if (text === '' || text.startsWith('/') || text.includes('\0')) return false;
  const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(relative), text));
  if (resolved === '.' || resolved === '..' || resolved.startsWith('../')) return false;
  return !(relative === resolved || relative.startsWith(`${resolved}/`));
}

/**
 * Reads [start, end) with one `dd` (GNU and busybox have `iflag=skip_bytes,count_bytes`) in 256 KiB blocks. The
 * older `tail -c +N | head -c` pipeline copied every byte once more through a pipe, in 8 KiB reads and writes:
 * on the test host it cost the server about as much CPU as sshd itself (bench/transfer.ts). A `dd` without those
 * flags (checked on a zero-byte copy first, so a failure never comes after output) falls back to the pipeline.
 */
const RANGE_SCRIPT =
  'if dd if=/dev/null of=/dev/null bs=1 count=0 iflag=skip_bytes,count_bytes 2>/dev/null; ' +
  'then exec dd if="$2" bs=262144 skip="$1" count="$3" iflag=skip_bytes,count_bytes; ' +
  'else tail -c +"$(($1 + 1))" -- "$2" | head -c "$3"; fi';

/**
 * The argv that writes bytes [start, end) of a file to stdout: a plain `cat` for a whole file, else one `dd`
 * (RANGE_SCRIPT). Arguments are positional parameters, so no name is parsed by a shell.
 */
export function rangeArgv(file: string, start: number, end: number, size: number): string[] {
  if (start === 0 && end >= size) return ['cat', '--', file];
  return ['sh', '-c', RANGE_SCRIPT, 'sh', String(start), file, String(end - start)];
}

/**
 * `r START FILE COUNT all|part` reads the range (as RANGE_SCRIPT), `h` hashes stdin with the fastest SHA-256 tool the
 * remote has (openssl ~0.9 s/GiB here with SHA-NI, sha256sum ~3 s/GiB without it, shasum), or prints `none`.
 */
const RANGE_FUNCTIONS =
  'r() { if [ "$4" = all ]; then cat -- "$2"; ' +
  'elif dd if=/dev/null of=/dev/null bs=1 count=0 iflag=skip_bytes,count_bytes 2>/dev/null; ' +
  'then dd if="$2" bs=262144 skip="$1" count="$3" iflag=skip_bytes,count_bytes; ' +
  'else tail -c +"$(($1 + 1))" -- "$2" | head -c "$3"; fi; }; ' +
  'if command -v openssl >/dev/null 2>&1; then h() { openssl dgst -sha256 -r; }; ' +
  'elif command -v sha256sum >/dev/null 2>&1; then h() { sha256sum -b; }; ' +
  'elif command -v shasum >/dev/null 2>&1; then h() { shasum -a 256 -b; }; ' +
  'else h() { cat >/dev/null; echo none; }; fi; ';

/**
 * The range on stdout, as rangeArgv, and its SHA-256 computed on the remote side, ending stderr as `rr-sha256 HEX`
 * (`rr-sha256 none` without a tool). The hash tool reads the range from the file itself, beside the reader that sends
 * it (a whole file as its stdin, with no pipe at all): passing every byte through `tee` into the tool cost the remote
 * side 1.5 CPU s/GiB more on the test host (4.75 against 3.26 for the whole stream). What it proves is what matters:
 * the bytes written here equal the range as the remote file holds it. A file rewritten between the two reads gives a
 * mismatch (fetched again) and a changed mtime (`changed`). The exit status is the reader's; a reader that fails (or
 * is stopped) does not wait for the hash, which ends by itself once it has read the range.
 */
const HASHED_RANGE_SCRIPT =
  RANGE_FUNCTIONS +
  'if [ "$4" = all ]; then { s=$(h < "$2"); printf "rr-sha256 %s\\n" "$s" >&2; } & ' +
  'else { s=$(r "$@" | h); printf "rr-sha256 %s\\n" "$s" >&2; } & fi; ' +
  'r "$@"; rc=$?; [ "$rc" != 0 ] || wait $!; exit "$rc"';

/** The argv of a range streamed with its remote SHA-256 (HASHED_RANGE_SCRIPT). */
export function hashedRangeArgv(file: string, start: number, end: number, size: number): string[] {
  const whole = start === 0 && end >= size;
  return ['sh', '-c', HASHED_RANGE_SCRIPT, 'sh', String(start), file, String(end - start), whole ? 'all' : 'part'];
}

/** The line a stream's stderr gives before the file's stat taken after its last byte (withStatAfter). */
const STAT_AFTER_MARK = 'rr-stat-after';

/**
 * `argv` (a stream of `file`), then, once it has exited 0, the file's stat as the plan's walk prints it
 * (statCheckpointCommand, so sizes and mtimes compare as the plan's do), on stderr after a line STAT_AFTER_MARK:
 * the look at the file after its last byte that a download otherwise asks for with a command of its own, one round
 * trip and one remote process start after the stream (statAfterOf reads it). A stream that fails exits with its own
 * status and no stat.
 */
export function withStatAfter(argv: readonly string[], file: string): string[] {
  return ['sh', '-c', `f=$1; s=$2; shift 2; "$@" || exit; printf "\n${STAT_AFTER_MARK}\n" >&2; sh -c "$s" sh "$f" >&2`, 'sh', file, STAT_SCRIPT, ...argv];
}

/**
 * The stat withStatAfter's command gave on stderr (after the stream's own lines: its SHA-256 line comes first, as the
 * hashed script waits for it), or undefined when it is not there whole (cut, an error of the walk, no such file): the
 * download then asks for it with a command of its own, which says what is wrong.
 */
export function statAfterOf(stderr: string): RemoteFileStat | undefined {
  const at = stderr.lastIndexOf(`\n${STAT_AFTER_MARK}\n`);
  if (at < 0) return undefined;
  try {
    const walk = parseWalk(Buffer.from(stderr.slice(at + STAT_AFTER_MARK.length + 2), 'latin1'), 'the streamed file', true);
    const st = walk.files.length === 1 && walk.status === 0 && walk.skipped.length === 0 ? walk.files[0] : undefined;
    return st && st.relative === '' ? st : undefined;
  } catch {
    return undefined;
  }
}

/** The remote SHA-256 a hashed stream's stderr ends with: the hex digest, 'none' (no tool), or undefined (absent). */
export function streamedSha256(stderr: string): string | undefined {
  const m = /^rr-sha256 ([0-9a-f]{64}|none)\b/im.exec(stderr);
  return m ? m[1].toLowerCase() : undefined;
}

/** SHA-256 of bytes [start, end) of a remote file, computed there (the resumed part of a file, an SFTP range). */
export function rangeSha256Command(file: string, start: number, end: number, size: number): RemoteCommand<string> {
  const whole = start === 0 && end >= size;
  return {
    argv: ['sh', '-c', RANGE_FUNCTIONS + 'r "$@" | h', 'sh', String(start), file, String(end - start), whole ? 'all' : 'part'],
    describe: `SHA-256 of ${path.posix.basename(file)} [${start}, ${end})`,
    parse(result) {
      if (result.code !== 0) throw commandFailed(`Computing the SHA-256 of ${file}`, result);
      const out = result.stdout.toString('utf8');
      if (/^none\b/.test(out)) throw noHashTool();
      const m = /^\\?([0-9a-f]{64})\b/i.exec(out);
      if (!m) throw new RemoteRunsError('protocol', `Unexpected checksum output for ${file}: ${JSON.stringify(out.slice(0, 100))}`);
      return m[1].toLowerCase();
    },
  };
}

export function noHashTool(): RemoteRunsError {
  return new RemoteRunsError(
    'command-failed',
    'The remote side has no SHA-256 tool (openssl, sha256sum or shasum), so the download cannot be verified; install one, or download checked by size only (--size-only, or the setting remoteRuns.verifyDownloads: size)',
  );
}

/** SHA-256 of a remote file: openssl (about 4x faster than sha256sum), then sha256sum, then shasum. */
export function sha256Command(file: string): RemoteCommand<string> {
  const script =
    'if command -v openssl >/dev/null 2>&1; then openssl dgst -sha256 -r "$1"; ' +
    'elif command -v sha256sum >/dev/null 2>&1; then sha256sum -b -- "$1"; ' +
    'elif command -v shasum >/dev/null 2>&1; then shasum -a 256 -b -- "$1"; ' +
    'else echo "no sha256 tool (openssl, sha256sum, shasum) on the remote side" >&2; exit 127; fi';
  return {
    argv: ['sh', '-c', script, 'sh', file],
    describe: `SHA-256 of ${path.posix.basename(file)}`,
    parse(result) {
      if (result.code !== 0) throw commandFailed(`Computing the SHA-256 of ${file}`, result);
      const m = /^\\?([0-9a-f]{64})\b/i.exec(result.stdout.toString('utf8'));
      if (!m) throw new RemoteRunsError('protocol', `Unexpected checksum output for ${file}: ${JSON.stringify(result.stdout.toString('utf8').slice(0, 100))}`);
      return m[1].toLowerCase();
    },
  };
}
