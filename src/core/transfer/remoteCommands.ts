/**
 * The remote commands of a download, as values: list a checkpoint's files with size and mtime, stream a byte
 * range, hash a file. All run inside the target through `runCommand`/`wrapForTarget`, arguments passed as
 * positional parameters of `sh -c` so no remote name is ever parsed by a shell.
 */
import * as path from 'node:path';
import { commandFailed, firstStderrLine, type RemoteCommand } from '../remote';
import { RemoteRunsError } from '../types';

export interface RemoteFileStat {
  /** Relative to the checkpoint path ('' for a flat file, which is its own root). */
  relative: string;
  bytes: number;
  /** ms since the epoch. */
  mtime: number;
  /** The entry is a symbolic link with this text (its size and mtime are its target's). */
  link?: string;
}

/**
 * GNU find prints the records itself (-printf). Without -printf (BusyBox find: `find: unrecognized: -printf`, as on
 * Alpine) the same records come from `stat -L -c '%s %Y'` per file and `readlink` per link, in a loop `find -exec`
 * feeds (slower: a process per file; whole-second mtimes, which only this host's later listings are compared with).
 * The relative path is the found path less the checkpoint's path and a slash (`%P`), '' for the checkpoint itself.
 */
/** `${` cannot be written inside String.raw; the script's parameter expansions interpolate it. */
const P = '${';
const STAT_SCRIPT = String.raw`if find "$1" -maxdepth 0 -printf "" >/dev/null 2>&1; then
  find -L "$1" -type f -printf "F%s\t%T@\t%P\0" || exit
  [ -d "$1" ] || exit 0; find "$1" -type l -printf "L%P\0%l\0" 2>/dev/null; exit 0
fi
files='for f; do if [ "$f" = "$0" ]; then r=; else r=${P}f#"$0"/}; fi; s=$(stat -L -c "%s %Y" -- "$f") || exit; printf "F%s\t%s\t%s\0" "${P}s% *}" "${P}s#* }" "$r"; done'
links='for f; do r=${P}f#"$0"/}; t=$(readlink -- "$f") && printf "L%s\0%s\0" "$r" "$t"; done'
find -L "$1" -type f -exec sh -c "$files" "$1" {} + || exit
[ -d "$1" ] || exit 0; find "$1" -type l -exec sh -c "$links" "$1" {} + 2>/dev/null; exit 0`;

/**
 * Every file under a checkpoint (or the file itself), following symlinks (checkpoints of HF caches are links into a
 * blob store): `F size \t mtime \t relative \0` records. Then, for a folder, its symlinks as they are, without
 * following: `L relative \0 text \0`, so a link to another file of the checkpoint can arrive as a link. One command.
 */
export function statCheckpointCommand(checkpointPath: string): RemoteCommand<RemoteFileStat[]> {
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
      return parseStatRecords(result.stdout);
    },
  };
}

/**
 * Parse the records of statCheckpointCommand (relative paths and link texts may hold tabs and newlines). Records
 * without the `F` mark (`size \t mtime \t relative`) are read as files too.
 */
export function parseStatRecords(stdout: Buffer): RemoteFileStat[] {
  const out: RemoteFileStat[] = [];
  const links = new Map<string, string>();
  const fields = stdout.toString('utf8').split('\0');
  for (let i = 0; i < fields.length; i++) {
    let rec = fields[i];
    if (rec === '') continue;
    if (rec.startsWith('L')) {
      const text = fields[++i];
      if (text === undefined || text === '') throw new RemoteRunsError('protocol', `Unexpected link record from find: ${JSON.stringify(rec.slice(0, 80))}`);
      links.set(rec.slice(1), text);
      continue;
    }
    if (rec.startsWith('F')) rec = rec.slice(1);
    const t1 = rec.indexOf('\t');
    const t2 = rec.indexOf('\t', t1 + 1);
    if (t1 < 0 || t2 < 0) throw new RemoteRunsError('protocol', `Unexpected file record from find: ${JSON.stringify(rec.slice(0, 80))}`);
    const bytes = Number(rec.slice(0, t1));
    const mtime = Math.round(Number(rec.slice(t1 + 1, t2)) * 1e6) / 1e3;
    if (!Number.isSafeInteger(bytes) || !Number.isFinite(mtime)) throw new RemoteRunsError('protocol', `Unexpected file record from find: ${JSON.stringify(rec.slice(0, 80))}`);
    out.push({ relative: rec.slice(t2 + 1), bytes, mtime });
  }
  for (const f of out) {
    const text = links.get(f.relative);
    if (text !== undefined && f.relative !== '') f.link = text;
  }
  return out;
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
