/**
 * The one function that makes a string safe to cross a POSIX shell. Every remote path, run name, container id
 * and templated value goes through here; no command is ever built by concatenating raw strings.
 *
 * Single quotes keep every byte literal (`$`, backticks, `\`, newlines, unicode) except `'` itself,
 * which is closed, escaped and reopened: `it's` → `'it'\''s'`. NUL cannot be carried by argv at all.
 *
 * Quoting works on text; a lone surrogate U+DC80–U+DCFF (a byte that is not UTF-8 in a listed name, util/nameBytes.ts)
 * passes through untouched. The command line becomes bytes in one place, shell/portable.ts printfFormat, which writes
 * such a character as its byte (Node's own UTF-8 would send U+FFFD's EF BF BD and name another file).
 */
import { RemoteRunsError } from '../types';

// No `=`: a first word like `A=1` would be read as an assignment, not a command.
const SAFE = /^[A-Za-z0-9_\-.,:/@%+]+$/;

export function shellQuote(value: string): string {
  if (value.includes('\0')) {
    throw new RemoteRunsError('bad-config', 'A shell argument cannot contain a NUL byte');
  }
  if (value !== '' && SAFE.test(value)) return value;
  // `\` is written as '"\\"' too: fish (a login shell some users have) treats `\\` and `\'` as escapes even
  // inside single quotes; a double-quoted `\\` means one backslash in POSIX shells and in fish alike.
  // One pass, so the escapes written for one character are never rewritten by the other rule.
  return `'${value.replace(/['\\]/g, (c) => (c === "'" ? `'\\''` : `'"\\\\"'`))}'`;
}

/** Quote each argument and join with spaces: the command line a remote shell will split back into `argv`. */
export function shellJoin(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}
