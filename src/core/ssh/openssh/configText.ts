/**
 * Writing values into an ssh_config file, for both OpenSSH users (connection.ts, the transport's wrapper config that
 * Includes the user's; session.ts, a transfer's own config): the one place that decides what can be written unquoted
 * and how a path is quoted.
 */

/** Values written unquoted: host aliases, host names, users (no spaces, quotes, `%` tokens, `#` comments, patterns). */
export const PLAIN = /^[A-Za-z0-9._:@\[\]-]+$/;

/**
 * A path as an ssh_config value: `%` doubled (token expansion), quoted when it holds spaces or `#`. A path holding a
 * quote or a line break cannot be written; `refuse` makes the caller's error for it.
 */
export function configPath(p: string, refuse: (message: string) => Error): string {
  if (/["\r\n]/.test(p)) throw refuse(`The path ${JSON.stringify(p)} cannot be written into an ssh config for OpenSSH`);
  const v = p.replace(/%/g, '%%');
  return /[\s#]/.test(v) ? `"${v}"` : v;
}
