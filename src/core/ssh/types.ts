/**
 * Contracts between the SSH layer and its callers. The extension implements Prompter with VS Code dialogs,
 * the CLI with a terminal (or refuses when there is no TTY), tests with scripted answers.
 */

/** Where the SSH layer reports what it does. Never given a secret. */
export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

/** One hop (or the final destination) after ~/.ssh/config resolution, as OpenSSH would connect. */
export interface ResolvedHop {
  /** The name the user wrote (alias), used in messages and as the pool key part. */
  alias: string;
  /** The address to connect to (HostName, else alias). */
  hostname: string;
  port: number;
  user: string;
  /** Key files in the order OpenSSH tries them (~ expanded). */
  identityFiles: string[];
  /** IdentitiesOnly: offer only identityFiles, not every agent key. */
  identitiesOnly: boolean;
  /**
   * Set when the name is neither a Host of the ssh config (no HostName applied) nor a configured host: if DNS does
   * not know it either, the connection fails with `not-found` (naming `closest`, the nearest configured name)
   * instead of `unreachable`.
   */
  unconfigured?: { closest?: string };
  /**
   * ProxyCommand (not the `ssh -W` idiom, which becomes a jump): the command line, tokens expanded and quoted, run
   * with `$SHELL -c "exec …"` as ssh does; SSH is spoken over its stdin/stdout. Only ever on the first hop.
   */
  proxyCommand?: { command: string; where: string };
  /** HostKeyAlias: the name looked up in (and written to) known_hosts instead of `[hostname]:port`. */
  hostKeyAlias?: string;
  /**
   * UserKnownHostsFile / GlobalKnownHostsFile from the ssh config (~ and tokens expanded), when either is set for
   * this hop: the files checked (user files first), and where a new key is written (the first user file; none
   * with `UserKnownHostsFile none`). Absent: the connection's own list.
   */
  knownHosts?: { files: string[]; appendTo?: string };
  /**
   * IdentityAgent from the ssh config: a socket path (expanded; `SSH_AUTH_SOCK` and `$VAR` read from the
   * environment), or null for `none` (no agent for this hop). Absent: the connection's agent (SSH_AUTH_SOCK).
   */
  identityAgent?: string | null;
  /** CertificateFile lines of the ssh config (expanded), each with its `file:line`: only OpenSSH can use them. */
  certificateFiles?: { path: string; where: string }[];
  /** `GSSAPIAuthentication yes` from the ssh config, with its `file:line`: only OpenSSH speaks GSSAPI. */
  gssapi?: { where: string };
  /** StrictHostKeyChecking (`no` is read as `accept-new`: a changed key is never accepted). Absent: `ask`. */
  strictHostKeyChecking?: 'yes' | 'ask' | 'accept-new';
}

/** A destination with the hops in front of it, nearest first. */
export interface ResolvedHost {
  jumps: ResolvedHop[];
  target: ResolvedHop;
  /**
   * What the ssh config holds that this connection does not follow, each `file:line: why`: problems of the whole
   * file (a Match criterion we cannot evaluate, …) and options that apply to one of its hops but are not honoured.
   * Shown to the user (a line of `ls`, the log); absent when there are none.
   */
  configProblems?: string[];
  /**
   * How OpenSSH itself would be asked for this host (the OpenSSH transport): the ssh config file it was resolved
   * from (absent: none, `-F /dev/null`) and what the host's settings override, as `ssh -l/-p/-i/-J` would.
   */
  openssh?: { configFile?: string; overrides: { user?: string; port?: number; identityFiles?: string[]; proxyJump?: string } };
}

export interface HostKeyInfo {
  /** As written in known_hosts: `host` or `[host]:port`. */
  hostPattern: string;
  hostname: string;
  port: number;
  keyType: string;
  /** `SHA256:…` like `ssh-keygen -lf`. */
  fingerprint: string;
  knownHostsFile: string;
}

export interface Prompter {
  /** An unknown host key: true trusts it (and it is appended to known_hosts). */
  confirmHostKey(info: HostKeyInfo): Promise<boolean>;
  /** Passphrase for an encrypted key file; undefined skips the key. Kept in memory only. */
  passphrase(keyPath: string): Promise<string | undefined>;
  /** Password for user@host; undefined gives up. */
  password(user: string, host: string): Promise<string | undefined>;
  /** Keyboard-interactive (one-time codes); undefined gives up. */
  keyboardInteractive(
    user: string,
    host: string,
    name: string,
    instructions: string,
    prompts: { prompt: string; echo: boolean }[],
  ): Promise<string[] | undefined>;
}

/** Connection state per host, shown on the tree node. */
export type ConnectionState =
  | { kind: 'idle' }
  /**
   * `attempt` counts from 1 in each round of attempts; `reconnect`: the host was connected before (the attempts
   * follow a lost connection). The tree and the metrics panels both word it from these two (one count, not two).
   */
  | {
      kind: 'connecting';
      attempt: number;
      reconnect?: boolean;
      /**
       * Set while the host's last round of attempts gave up (unreachable: why) and a new one runs because something
       * asked again: the host is still unreachable until one succeeds, so it is shown as such, not as a fresh
       * reconnect (a background poll starting a round every few seconds would otherwise show "reconnecting" nearly
       * all the time and "unreachable" for a moment between rounds).
       */
      gaveUp?: string;
    }
  | { kind: 'connected' }
  | { kind: 'unreachable'; message: string }
  | { kind: 'auth-failed'; message: string }
  | { kind: 'host-key-unknown'; message: string }
  | { kind: 'host-key-mismatch'; message: string };
