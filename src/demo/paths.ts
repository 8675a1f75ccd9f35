/**
 * Where the demo keeps everything: one folder under the user's cache directory
 * (`$XDG_CACHE_HOME/remote-runs-demo`, else `~/.cache/remote-runs-demo`; `REMOTE_RUNS_DEMO_DIR` overrides, for tests).
 * Keys persist between starts; the machine tree is rewritten on every start.
 */
import * as os from 'node:os';
import * as path from 'node:path';

/** Every path the demo writes, derived from one base folder. */
export interface DemoPaths {
  base: string;
  /** ssh2 server host key (OpenSSH private key format). */
  hostKey: string;
  /** The one client key the server accepts, and its public half. */
  clientKey: string;
  clientPublicKey: string;
  /** known_hosts holding the demo host key for `[127.0.0.1]:PORT`. */
  knownHosts: string;
  /** A CLI config `{"hosts":[…]}` naming the demo host. */
  cliConfig: string;
  /** The demo machine: its top-level folders become the machine's `/root`, `/workspace`, `/var`, `/opt`, `/tmp`. */
  machine: string;
  /** An empty folder the machine's root is mounted on, inside the demo's own mount namespace only. */
  mountPoint: string;
  /** The isolated VS Code profile. */
  vscodeUserData: string;
  vscodeExtensions: string;
  /** A folder VS Code opens (a small README for the demo). */
  vscodeWorkspace: string;
  /** pid and port of the running demo, so a second start says so instead of fighting over the tree. */
  stateFile: string;
}

/** The demo's base folder for this environment. */
export function demoBaseDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.REMOTE_RUNS_DEMO_DIR) return path.resolve(env.REMOTE_RUNS_DEMO_DIR);
  const cache = env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : path.join(env.HOME || os.homedir(), '.cache');
  return path.join(cache, 'remote-runs-demo');
}

/** All demo paths under `base`. */
export function demoPaths(base: string): DemoPaths {
  return {
    base,
    hostKey: path.join(base, 'keys', 'host_ed25519'),
    clientKey: path.join(base, 'keys', 'client_ed25519'),
    clientPublicKey: path.join(base, 'keys', 'client_ed25519.pub'),
    knownHosts: path.join(base, 'known_hosts'),
    cliConfig: path.join(base, 'cli-config.json'),
    machine: path.join(base, 'machine'),
    mountPoint: path.join(base, 'mnt'),
    vscodeUserData: path.join(base, 'vscode', 'user-data'),
    vscodeExtensions: path.join(base, 'vscode', 'extensions'),
    vscodeWorkspace: path.join(base, 'vscode', 'workspace'),
    stateFile: path.join(base, 'running.json'),
  };
}
