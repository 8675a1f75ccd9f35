import * as os from 'node:os';

/**
 * A leading `~` (alone or before `/`) as the home folder, as a shell expands it in a setting or config file;
 * `~user` and a `~` elsewhere are left as written. The one expansion of `~` for local paths (settings, the CLI's
 * config file, known_hosts lists, download folders). Remote paths are never expanded here: the remote shell does.
 */
export function expandHome(p: string, home: string = os.homedir()): string {
  return p.replace(/^~(?=\/|$)/, home);
}
