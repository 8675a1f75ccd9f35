/**
 * Real OpenSSH servers on 127.0.0.1 for integration tests: never the system's sshd. Each server gets its own temp
 * folder (config, host key, authorized_keys, pid file, log), a free port, and logs in as an unprivileged user the
 * harness creates, so permission errors are real (root ignores file modes).
 *
 * Facts this relies on (checked on Debian 12, OpenSSH 9.2):
 * - sshd needs /run/sshd (privilege separation) even with -D; we create it.
 * - Without PAM, a `useradd` account is locked (`!`) and sshd refuses it even for keys; setting a password with
 *   chpasswd unlocks it, and sshd checks that password against /etc/shadow with crypt(3) (yescrypt works).
 * - Without PAM, sshd lists `keyboard-interactive` when asked but has no device to drive it, so it never sends a
 *   prompt; `usePam: true` makes it real (pam_unix asks "Password:").
 * - An exec session runs `$SHELL -c CMD`, not a login shell, so ~/.profile is not read: `SetEnv PATH=…` in
 *   sshd_config is what puts `extraPath` on the PATH of commands.
 * - authorized_keys is read with the user's uid: the temp folder must be traversable and the file readable.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

/** The unprivileged account every test server logs in as. */
export const TEST_USER = 'rrtest';
/** Its password (for password and keyboard-interactive tests). Test-only, local account. */
export const TEST_PASSWORD = 'rr-test-pw-7f3a';
/** Passphrase of the encrypted client key. */
export const TEST_PASSPHRASE = 'correct horse battery';

export interface SshdOptions {
  /** Default false. */
  passwordAuthentication?: boolean;
  /** Default false. Without `usePam` sshd offers it but never prompts. */
  kbdInteractiveAuthentication?: boolean;
  /** Default false. True makes keyboard-interactive real (via /etc/pam.d/sshd). */
  usePam?: boolean;
  /** Folders put in front of the session PATH (e.g. test/shims for pct/docker). */
  extraPath?: string[];
  /** Default true, so the server can serve as a jump host. */
  allowTcpForwarding?: boolean;
  /** Default VERBOSE: logs each accepted login, which tests count. */
  logLevel?: 'INFO' | 'VERBOSE' | 'DEBUG1';
  /** Host key types to generate; the first is `hostKeyPublic`. Default ['ed25519']. */
  hostKeyTypes?: ('ed25519' | 'ecdsa' | 'rsa')[];
  /** More sshd_config lines, appended last. */
  extraConfig?: string[];
}

export interface TestSshd {
  host: '127.0.0.1';
  port: number;
  /** The temp folder holding everything of this server. */
  dir: string;
  user: string;
  password: string;
  /** `type base64` of the first host key. */
  hostKeyPublic: string;
  hostKeyType: string;
  hostKeyBlob: Buffer;
  /** `[127.0.0.1]:port type base64`: a known_hosts line trusting this server. */
  knownHostsLine: string;
  /** An unencrypted ed25519 client key in authorized_keys. */
  clientKeyPath: string;
  /** A passphrase-encrypted ed25519 client key in authorized_keys. */
  encryptedKeyPath: string;
  passphrase: string;
  /** The listening sshd's pid. */
  pid: number;
  /** Everything sshd logged so far (stderr, -e). */
  log(): string;
  /** Number of successful logins (one per SSH connection): how tests count connections. */
  acceptedLogins(): number;
  /**
   * Successful logins by client software (`ssh2js`, `OpenSSH`: the name in the client's version string, up to its
   * version number), each login paired with the last version line before it. Needs `logLevel: 'DEBUG1'` (sshd logs
   * the client's version only there) and logins that do not start in the same instant.
   */
  acceptedLoginsByClient(): Record<string, number>;
  /** Pids of per-connection sshd processes (direct children of the listener), one per open connection. */
  connectionPids(): number[];
  /** SIGKILL every per-connection process tree: the client sees the connection drop. Returns how many connections. */
  killConnections(): number;
  /** SIGSTOP every per-connection process tree: the connection freezes without closing. */
  freezeConnections(): number;
  /** SIGCONT what freezeConnections stopped. */
  thawConnections(): void;
  /** Kill the server and everything it started, remove its folder. */
  stop(): Promise<void>;
}

/** Create (once) the unprivileged test account with a known password; safe to call from parallel processes. */
export function ensureTestUser(): { user: string; password: string; home: string } {
  const exists = (): boolean => {
    try {
      execFileSync('id', ['-u', TEST_USER], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };
  if (!exists()) {
    try {
      execFileSync('useradd', ['-m', '-s', '/bin/bash', TEST_USER], { stdio: 'pipe' });
    } catch (e) {
      if (!exists()) throw e; // another process won the race otherwise
    }
  }
  // Setting a password unlocks the account (`useradd` leaves `!`), which sshd without PAM needs even for keys.
  execFileSync('chpasswd', { input: `${TEST_USER}:${TEST_PASSWORD}\n`, stdio: ['pipe', 'ignore', 'pipe'] });
  const home = execFileSync('getent', ['passwd', TEST_USER], { encoding: 'utf8' }).split(':')[5];
  return { user: TEST_USER, password: TEST_PASSWORD, home };
}

/** Start one sshd. Call `stop()` in an `after` hook. */
export async function startSshd(options: SshdOptions = {}): Promise<TestSshd> {
  const { user, password } = ensureTestUser();
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const dir = mkdtempSync(path.join(tmpdir(), 'rr-sshd-'));
  chmodSync(dir, 0o755); // sshd reads authorized_keys as the test user

  const hostKeyTypes = options.hostKeyTypes ?? ['ed25519'];
  const hostKeys = hostKeyTypes.map((t) => {
    const p = path.join(dir, `ssh_host_${t}_key`);
    keygen(t, '', p);
    return p;
  });
  const clientKeyPath = path.join(dir, 'id_ed25519');
  const encryptedKeyPath = path.join(dir, 'id_ed25519_enc');
  keygen('ed25519', '', clientKeyPath);
  keygen('ed25519', TEST_PASSPHRASE, encryptedKeyPath);
  const authorizedKeys = path.join(dir, 'authorized_keys');
  writeFileSync(authorizedKeys, readFileSync(`${clientKeyPath}.pub`, 'utf8') + readFileSync(`${encryptedKeyPath}.pub`, 'utf8'));
  chmodSync(authorizedKeys, 0o644);

  const [hostKeyType, hostKeyB64] = readFileSync(`${hostKeys[0]}.pub`, 'utf8').trim().split(/\s+/);

  for (let tries = 0; ; tries++) {
    const port = await freePort();
    const configPath = path.join(dir, 'sshd_config');
    writeFileSync(configPath, sshdConfig(dir, port, hostKeys, authorizedKeys, options).join('\n') + '\n');
    const started = await launch(configPath);
    if ('error' in started) {
      if (/Address already in use/.test(started.error) && tries < 5) continue;
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`sshd did not start: ${started.error}`);
    }
    const { child, logText } = started;
    const pid = child.pid!;
    const stopped = new Set<number>();
    const connectionPids = (): number[] => childrenOf(pid);
    const signalTrees = (signal: NodeJS.Signals): number => {
      const roots = connectionPids();
      for (const root of roots) {
        for (const p of [root, ...descendantsOf(root)]) {
          try {
            process.kill(p, signal);
            if (signal === 'SIGSTOP') stopped.add(p);
          } catch {
            // already gone
          }
        }
      }
      return roots.length;
    };
    return {
      host: '127.0.0.1',
      port,
      dir,
      user,
      password,
      hostKeyPublic: `${hostKeyType} ${hostKeyB64}`,
      hostKeyType,
      hostKeyBlob: Buffer.from(hostKeyB64, 'base64'),
      knownHostsLine: `[127.0.0.1]:${port} ${hostKeyType} ${hostKeyB64}`,
      clientKeyPath,
      encryptedKeyPath,
      passphrase: TEST_PASSPHRASE,
      pid,
      log: logText,
      acceptedLogins: () => (logText().match(/^Accepted \S+ for /gm) ?? []).length,
      acceptedLoginsByClient: () => {
        if ((options.logLevel ?? 'VERBOSE') !== 'DEBUG1') throw new Error("acceptedLoginsByClient needs an sshd started with logLevel 'DEBUG1'");
        const by: Record<string, number> = {};
        let client = 'unknown';
        for (const line of logText().split('\n')) {
          // `ssh2js1.17.0` → ssh2js, `OpenSSH_9.2p1 Debian-2` → OpenSSH: the name before its dotted version.
          const v = /remote software version (\S+?)_?\d+(?:\.\d+)+/.exec(line);
          if (v) client = v[1];
          else if (/^Accepted \S+ for /.test(line)) by[client] = (by[client] ?? 0) + 1;
        }
        return by;
      },
      connectionPids,
      killConnections: () => signalTrees('SIGKILL'),
      freezeConnections: () => signalTrees('SIGSTOP'),
      thawConnections: () => {
        for (const p of stopped) {
          try {
            process.kill(p, 'SIGCONT');
          } catch {
            // already gone
          }
        }
        stopped.clear();
      },
      stop: async () => {
        // Connection children outlive the listener, so kill them first (a stopped process dies on SIGKILL too).
        for (const p of descendantsOf(pid)) {
          try {
            process.kill(p, 'SIGKILL');
          } catch {
            // already gone
          }
        }
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise((r) => child.once('exit', r));
          child.kill('SIGTERM');
          await exited;
        }
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
}

/** A jump host and a target behind it (both on loopback; the target is reached through the jump's forwarding). */
export async function startJumpPair(
  targetOptions: SshdOptions = {},
): Promise<{ jump: TestSshd; target: TestSshd; stop(): Promise<void> }> {
  const target = await startSshd(targetOptions);
  // DEBUG1 makes the jump log each direct-tcpip request, so a test can prove the route went through it.
  const jump = await startSshd({ allowTcpForwarding: true, logLevel: 'DEBUG1' });
  return { jump, target, stop: async () => void (await Promise.all([jump.stop(), target.stop()])) };
}

function sshdConfig(dir: string, port: number, hostKeys: string[], authorizedKeys: string, o: SshdOptions): string[] {
  const yn = (b: boolean | undefined): string => (b ? 'yes' : 'no');
  const lines = [
    `ListenAddress 127.0.0.1`,
    `Port ${port}`,
    ...hostKeys.map((k) => `HostKey ${k}`),
    `PidFile ${path.join(dir, 'sshd.pid')}`,
    `AuthorizedKeysFile ${authorizedKeys}`,
    `UsePAM ${yn(o.usePam)}`,
    `StrictModes no`,
    `PubkeyAuthentication yes`,
    `PasswordAuthentication ${yn(o.passwordAuthentication)}`,
    `KbdInteractiveAuthentication ${yn(o.kbdInteractiveAuthentication)}`,
    `PermitRootLogin no`,
    `AllowUsers ${TEST_USER}`,
    `AllowTcpForwarding ${yn(o.allowTcpForwarding ?? true)}`,
    `Subsystem sftp internal-sftp`,
    `LogLevel ${o.logLevel ?? 'VERBOSE'}`,
    `PrintMotd no`,
    `UseDNS no`,
  ];
  if (o.extraPath?.length) {
    lines.push(`SetEnv PATH=${[...o.extraPath, '/usr/local/bin', '/usr/bin', '/bin'].join(':')}`);
  }
  lines.push(...(o.extraConfig ?? []));
  return lines;
}

function keygen(type: string, passphrase: string, file: string): void {
  const args = ['-q', '-t', type, '-N', passphrase, '-C', path.basename(file), '-f', file];
  if (type === 'rsa') args.push('-b', '2048');
  execFileSync('ssh-keygen', args, { stdio: 'ignore' });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Start sshd and wait until it listens (its "Server listening" line), or report why it did not. sshd logs to a file
 * (-E), not to a pipe: a test that blocks the event loop (a synchronous CLI run) cannot fill a pipe sshd then blocks
 * on, which stopped sshd answering after a few dozen logins.
 */
function launch(configPath: string): Promise<{ child: ChildProcess; logText: () => string } | { error: string }> {
  const logPath = path.join(path.dirname(configPath), `sshd-${path.basename(configPath)}.log`);
  writeFileSync(logPath, '');
  const logText = (): string => {
    try {
      return readFileSync(logPath, 'utf8');
    } catch {
      return '';
    }
  };
  return new Promise((resolve) => {
    const child = spawn('/usr/sbin/sshd', ['-D', '-E', logPath, '-f', configPath], { stdio: ['ignore', 'ignore', 'ignore'] });
    let settled = false;
    const timer = setTimeout(() => finish({ error: `no "Server listening" line within 10 s:\n${logText()}` }), 10_000);
    const poll = setInterval(() => {
      if (/Server listening on /.test(logText())) finish({ child, logText });
    }, 25);
    const finish = (r: { child: ChildProcess; logText: () => string } | { error: string }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(poll);
      if ('error' in r && child.exitCode === null) child.kill('SIGKILL');
      resolve(r);
    };
    child.once('exit', (code, signal) => finish({ error: `sshd exited (${code ?? signal}):\n${logText()}` }));
    child.once('error', (e) => finish({ error: e.message }));
  });
}

/** Direct children of a process, from /proc. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // Field 4 (ppid) follows the parenthesised command name, which may itself hold spaces.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      // exited while we looked
    }
  }
  return out;
}

function descendantsOf(pid: number): number[] {
  const out: number[] = [];
  for (const c of childrenOf(pid)) out.push(c, ...descendantsOf(c));
  return out;
}
