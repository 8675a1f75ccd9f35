/**
 * The one function that makes a string safe to cross a POSIX shell. Every remote path, run name, container id
 * and templated value goes through here; no command is ever built by concatenating raw strings.
 *
 * Single quotes keep every byte literal (`$`, backticks, `\`, newlines, unicode) except `'` itself,
 * which is closed, escaped and reopened: `it's` → `'it'\''s'`. NUL cannot be carried by argv at all.
 */
import { RemoteRunsError } from '../types';

const SAFE = /^[A-Za-z0-9_\-.,:/@%+=]+$/;

export function shellQuote(value: string): string {
  if (value.includes('\0')) {
    throw new RemoteRunsError('bad-config', 'A shell argument cannot contain a NUL byte');
  }
  if (value !== '' && SAFE.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Quote each argument and join with spaces: the command line a remote shell will split back into `argv`. */
export function shellJoin(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}
