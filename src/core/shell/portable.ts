/**
 * The one wrapper every remote command line goes through, so that it runs under `/bin/sh` whatever the user's login
 * shell is, and so that whatever the shell's rc files print before it is told apart from its output.
 *
 * sshd does not run our command itself: it hands the line to the user's login shell (`$SHELL -c LINE`, OpenSSH
 * session.c do_child), which reads its rc files first (bash run by sshd reads ~/.bashrc, csh/tcsh ~/.cshrc or
 * ~/.tcshrc, fish config.fish, zsh ~/.zshenv) and then parses LINE with its own grammar. A POSIX-quoted line is not
 * valid in every shell: csh and tcsh refuse a newline inside quotes (`Unmatched '''`) and expand `!` (history);
 * fish reads `\\` and `\'` inside single quotes as escapes. So the line we send holds only what reads the same in
 * sh, bash, dash, zsh, csh, tcsh, fish and BusyBox sh:
 *
 *     exec /bin/sh -c 'eval "$(printf "$1")"' sh 'PAYLOAD'
 *
 * - `exec` replaces the login shell by `/bin/sh` (a builtin of all of them), so nothing of the login shell runs
 *   after our command (no logout files) and its exit status is the command's.
 * - The program text between the single quotes has no `!`, no backslash and no newline; `$` and `"` are literal
 *   inside single quotes in all of them.
 * - PAYLOAD is the real script written as a printf format: bytes outside printable ASCII, and `'`, `\`, `!`, `%`
 *   written as `\ooo` octal escapes (or `%%`), which every POSIX printf decodes in its format (dash's and bash's
 *   builtins, BusyBox's applet). No `\\` or `\'` is ever written, so fish keeps it verbatim too.
 * - The script first prints FENCE on stdout and on stderr: the output of a command is what follows it (`unfence`);
 *   rc-file noise before it is dropped, and a login shell that never ran the command (nologin, a shell that
 *   refused the line) is recognised by the missing FENCE and its own words shown (`shellRefused`).
 *
 * Cost: one extra `sh` exec and a printf of the script (about 0.5 ms per command on a loaded 2-core machine); the
 * payload grows by 3 bytes per escaped byte (newlines, quotes), e.g. the listing command from 8.9 KB to 11.8 KB
 * (test/unit/portableShell.test.ts bounds it), far below Linux's 128 KiB limit on one argument.
 */
import { RemoteRunsError } from '../types';
import { encodeName } from '../util/nameBytes';
import type { ExecResult } from '../types';

/** What the script prints first on stdout and stderr: NUL-led, so no text an rc file prints can be taken for it. */
export const FENCE = Buffer.from('\0rr-fence-1\0', 'latin1');

const FENCE_PRINTF = [...FENCE].map((b) => (b === 0 ? '\\000' : String.fromCharCode(b))).join('');

/**
 * printf-format escape of one script: bytes that are not plain in every shell's single quotes become `\ooo`. The
 * script's bytes are its names' bytes (util/nameBytes.ts encodeName): a byte of a remote name that is not UTF-8 (a
 * lone surrogate U+DC80–U+DCFF in the name, as the listing decoded it) is sent as that byte, where Node's own UTF-8
 * would send U+FFFD's EF BF BD and name another file. Every remote command crosses here (wrapForTarget), so this is
 * the one place a remote path becomes bytes.
 */
export function printfFormat(script: string): string {
  let out = '';
  for (const b of encodeName(script)) {
    if (b === 0x25) out += '%%';
    else if (b < 0x20 || b >= 0x7f || b === 0x27 || b === 0x5c || b === 0x21) out += `\\${b.toString(8).padStart(3, '0')}`;
    else out += String.fromCharCode(b);
  }
  return out;
}

/**
 * The command line (for any login shell) that runs `script` under /bin/sh, its stdout and stderr each led by FENCE
 * when `fence` (a raw byte stream written straight into a file is sent without it: `fence: false`).
 */
export function portableCommandLine(script: string, fence = true): string {
  if (script.includes('\0')) throw new RemoteRunsError('bad-config', 'A remote command cannot contain a NUL byte');
  const full = fence ? `printf '${FENCE_PRINTF}'; printf '${FENCE_PRINTF}' >&2; ${script}` : script;
  return `exec /bin/sh -c 'eval "$(printf "$1")"' sh '${printfFormat(full)}'`;
}

/** Where the fenced output starts in `out` (just after FENCE), or -1 when FENCE is not in it. */
export function fenceEnd(out: Buffer): number {
  const at = out.indexOf(FENCE);
  return at < 0 ? -1 : at + FENCE.length;
}

/**
 * The command's own result: stdout and stderr from just after their FENCE (what the login shell's rc files printed
 * before it is dropped). A result without FENCE on stdout is the login shell's own (it never ran the command):
 * returned as is, for `shellRefused`.
 */
export function unfence(result: ExecResult): ExecResult {
  const out = fenceEnd(result.stdout);
  if (out < 0) return result;
  const err = fenceEnd(result.stderr);
  return {
    ...result,
    stdout: result.stdout.subarray(out),
    stderr: err < 0 ? result.stderr : result.stderr.subarray(err),
    shellNoise: out - FENCE.length,
  };
}

/**
 * A result whose stdout never got FENCE means the login shell did not run our command: `nologin` (whose reason is
 * on stdout: "This account is currently not available." or /etc/nologin.txt), a shell that could not parse the
 * line, a missing /bin/sh. Its own words (stdout and stderr) are the message; a truncated or cancelled run is not
 * judged. Undefined when FENCE was seen.
 */
export function shellRefused(result: ExecResult): RemoteRunsError | undefined {
  // A signal (a kill, a dropped session) is not the shell's answer: left to the usual classification.
  if (fenceEnd(result.stdout) >= 0 || result.truncated || result.code === null) return undefined;
  if (result.code === 0 && result.stdout.length === 0 && result.stderr.length === 0) return undefined;
  const said = `${result.stdout.toString('utf8')}\n${result.stderr.toString('utf8')}`
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l)
    .slice(0, 3)
    .join(' / ')
    .slice(0, 500);
  return new RemoteRunsError('command-failed', `The remote login shell did not run the command (exit code ${result.code})${said ? `: ${said}` : ', and said nothing'}`, {
    exitCode: result.code,
    stderr: said,
  });
}

/**
 * Passes on only the stdout bytes after FENCE as they arrive: what came before it is the login
 * shell's rc-file noise. FENCE may span chunks; the bytes before it are copied and held until it is seen. Returns
 * what `push` returned (a sink's promise, for back-pressure).
 */
export function fenceSkipper<R>(push: (chunk: Buffer) => R): (chunk: Buffer) => R | undefined {
  let held: Buffer | undefined = Buffer.alloc(0);
  return (chunk) => {
    if (!held) return push(chunk);
    held = Buffer.concat([held, chunk]);
    const at = held.indexOf(FENCE);
    if (at < 0) {
      // Keep only what may still be the start of FENCE.
      if (held.length >= FENCE.length) held = Buffer.from(held.subarray(held.length - FENCE.length + 1));
      return undefined;
    }
    const rest = held.subarray(at + FENCE.length);
    held = undefined;
    return rest.length ? push(rest) : undefined;
  };
}

/**
 * A tool the script needed that the remote does not have, from the shell's own words on stderr (dash: `sh: 17: od:
 * not found`, or `sh: 1: eval: od: not found` for the wrapper's own line; bash: `sh: line 1: od: command not found`;
 * BusyBox ash: `sh: od: not found`), whatever the exit status:
 * a script that went on without it would otherwise be read as if its output were whole. Undefined when none.
 */
export function missingTool(result: ExecResult): string | undefined {
  return /^[^:\n]*sh(?:: (?:line )?\d+)?: (?:eval: )?([^:\s]+): (?:command )?not found$/m.exec(result.stderr.toString('utf8'))?.[1];
}
