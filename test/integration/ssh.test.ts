/**
 * The SSH layer against real OpenSSH servers on 127.0.0.1 (test/harness/sshd.ts): authentication, host keys,
 * jump hosts, and the pool's sharing, queueing, reconnecting, keepalive and cancellation.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startJumpPair, startSshd, type TestSshd } from '../harness/sshd';
import { SshConnection } from '../../src/core/ssh/connection';
import { ConnectionPool, type PoolHost, type StateChange } from '../../src/core/ssh/pool';
import type { HostKeyInfo, Logger, Prompter, ResolvedHop } from '../../src/core/ssh/types';
import { RemoteRunsError } from '../../src/core/types';
import { rejectsWith } from '../harness/assertKind';
import { startTcpProxy } from '../harness/tcpProxy';

// Never the real ~/.ssh: every default that could reach it points into a temp folder.
const home = mkdtempSync(path.join(tmpdir(), 'rr-home-'));
process.env.HOME = home;
delete process.env.SSH_AUTH_SOCK;
after(() => rmSync(home, { recursive: true, force: true }));

/** A Prompter with scripted answers that records every question. */
class ScriptedPrompter implements Prompter {
  readonly asked: string[] = [];
  hostKeyInfos: HostKeyInfo[] = [];
  constructor(
    private readonly answers: {
      trustHostKey?: boolean;
      passphrases?: (string | undefined)[];
      passwords?: (string | undefined)[];
      kbd?: (string[] | undefined)[];
    } = {},
  ) {}
  async confirmHostKey(info: HostKeyInfo): Promise<boolean> {
    this.asked.push(`hostkey ${info.hostPattern}`);
    this.hostKeyInfos.push(info);
    return this.answers.trustHostKey ?? false;
  }
  async passphrase(keyPath: string): Promise<string | undefined> {
    this.asked.push(`passphrase ${path.basename(keyPath)}`);
    return this.answers.passphrases?.shift();
  }
  async password(user: string, host: string): Promise<string | undefined> {
    this.asked.push(`password ${user}@${host}`);
    return this.answers.passwords?.shift();
  }
  async keyboardInteractive(_u: string, _h: string, _n: string, _i: string, prompts: { prompt: string }[]): Promise<string[] | undefined> {
    this.asked.push(`kbd ${prompts.map((p) => p.prompt.trim()).join('|')}`);
    return this.answers.kbd?.shift();
  }
}

class MemoryLogger implements Logger {
  readonly lines: string[] = [];
  info(m: string): void {
    this.lines.push(`info ${m}`);
  }
  warn(m: string): void {
    this.lines.push(`warn ${m}`);
  }
  error(m: string): void {
    this.lines.push(`error ${m}`);
  }
}

function hopFor(s: TestSshd, alias: string, identityFiles: string[] = [s.clientKeyPath]): ResolvedHop {
  return { alias, hostname: s.host, port: s.port, user: s.user, identityFiles, identitiesOnly: true };
}

/** A fresh known_hosts file in the temp home, trusting the given servers. */
function knownHosts(name: string, ...servers: TestSshd[]): string {
  const dir = path.join(home, name);
  mkdirSync(dir, { recursive: true });
  const p = path.join(dir, 'known_hosts');
  writeFileSync(p, servers.map((s) => s.knownHostsLine + '\n').join(''));
  return p;
}


/** Poll until `check` holds (no timing assertions: the test's own timeout bounds it). */
async function eventually(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  // A guard against hanging the whole suite, not a performance assertion: everything here takes well under 1 s.
  const giveUp = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > giveUp) assert.fail(`gave up waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function stateLog(pool: ConnectionPool): StateChange[] {
  const seen: StateChange[] = [];
  pool.onDidChangeState((e) => seen.push(e));
  return seen;
}

/** A folder the test user can write to, for marker files a remote command leaves when it has started. */
function markerDir(s: TestSshd): string {
  const d = path.join(s.dir, 'markers');
  mkdirSync(d, { recursive: true });
  chmodSync(d, 0o777);
  return d;
}

describe('one server, key and password auth', () => {
  let s: TestSshd;
  let shims: string;
  before(async () => {
    shims = mkdtempSync(path.join(tmpdir(), 'rr-shims-'));
    chmodSync(shims, 0o755);
    writeFileSync(path.join(shims, 'rr-probe'), '#!/bin/sh\necho probe-ok\n', { mode: 0o755 });
    s = await startSshd({ passwordAuthentication: true, extraPath: [shims] });
  });
  after(async () => {
    await s.stop();
    rmSync(shims, { recursive: true, force: true });
  });

  test('key auth: exec returns stdout, stderr, exit code, takes stdin, and truncates at maxOutputBytes', async () => {
    const prompter = new ScriptedPrompter();
    const conn = await SshConnection.connect(
      { jumps: [], target: hopFor(s, 'box') },
      { prompter, logger: new MemoryLogger(), knownHostsFiles: [knownHosts('key', s)], agent: null },
    );
    try {
      const r = await conn.exec('id -un; echo oops >&2; exit 7');
      assert.equal(r.stdout.toString(), `${s.user}\n`);
      assert.equal(r.stderr.toString(), 'oops\n');
      assert.equal(r.code, 7);
      assert.equal(r.truncated, false);
      const echoed = await conn.exec('cat', { stdin: 'from stdin\n' });
      assert.equal(echoed.stdout.toString(), 'from stdin\n');
      const big = await conn.exec('yes 0123456789 | head -c 1000000', { maxOutputBytes: 1000 });
      assert.equal(big.stdout.length, 1000);
      assert.equal(big.truncated, true);
      const killed = await conn.exec('kill -KILL $$');
      assert.equal(killed.code, null);
      assert.equal(killed.signal, 'SIGKILL', 'signal names as Node spells them');
      assert.deepEqual(prompter.asked, [], 'a plain key and a known host ask nothing');
    } finally {
      conn.close();
    }
  });

  test('extraPath puts the shim folder on the PATH of commands', async () => {
    const conn = await SshConnection.connect(
      { jumps: [], target: hopFor(s, 'box') },
      { prompter: new ScriptedPrompter(), logger: new MemoryLogger(), knownHostsFiles: [knownHosts('path', s)], agent: null },
    );
    try {
      const r = await conn.exec('command -v rr-probe && rr-probe');
      assert.equal(r.stdout.toString(), `${path.join(shims, 'rr-probe')}\nprobe-ok\n`);
    } finally {
      conn.close();
    }
  });

  test('encrypted key: a wrong passphrase asks again; asked once for many commands and after a reconnect', async () => {
    const prompter = new ScriptedPrompter({ passphrases: ['wrong', s.passphrase] });
    const logger = new MemoryLogger();
    const pool = new ConnectionPool({ prompter, logger, knownHostsFiles: [knownHosts('enc', s)], agent: null });
    const host: PoolHost = { name: 'enc', jumps: [], target: hopFor(s, 'enc', [s.encryptedKeyPath]) };
    try {
      for (let i = 0; i < 4; i++) {
        assert.equal((await pool.exec(host, `echo ${i}`)).stdout.toString(), `${i}\n`);
      }
      pool.disconnect('enc');
      assert.equal((await pool.exec(host, 'echo again')).stdout.toString(), 'again\n');
      assert.deepEqual(prompter.asked, ['passphrase id_ed25519_enc', 'passphrase id_ed25519_enc']);
      assert.ok(!logger.lines.some((l) => l.includes(s.passphrase)), 'the passphrase never reaches the log');
    } finally {
      pool.dispose();
    }
  });

  test('password auth: asked once for several commands, never logged', async () => {
    const prompter = new ScriptedPrompter({ passwords: [s.password] });
    const logger = new MemoryLogger();
    const pool = new ConnectionPool({ prompter, logger, knownHostsFiles: [knownHosts('pw', s)], agent: null });
    const host: PoolHost = { name: 'pw', jumps: [], target: hopFor(s, 'pw', []) };
    const before = s.acceptedLogins();
    try {
      const results = await Promise.all([1, 2, 3, 4, 5].map((i) => pool.exec(host, `echo ${i}`)));
      assert.deepEqual(results.map((r) => r.stdout.toString()), ['1\n', '2\n', '3\n', '4\n', '5\n']);
      assert.deepEqual(prompter.asked, [`password ${s.user}@pw`]);
      await eventually(() => /Accepted password for/.test(s.log()), 'password login logged');
      assert.equal(s.acceptedLogins() - before, 1);
      assert.ok(!logger.lines.some((l) => l.includes(s.password)));
    } finally {
      pool.dispose();
    }
  });

  test('a wrong password is asked three times, then auth-failed names the methods', async () => {
    const prompter = new ScriptedPrompter({ passwords: ['nope1', 'nope2', 'nope3', 'never-asked'] });
    const pool = new ConnectionPool({ prompter, logger: new MemoryLogger(), knownHostsFiles: [knownHosts('badpw', s)], agent: null });
    const states = stateLog(pool);
    try {
      const e = await rejectsWith(pool.exec({ name: 'badpw', jumps: [], target: hopFor(s, 'badpw', []) }, 'true'), 'auth-failed');
      assert.match(e.message, /password/);
      assert.equal(prompter.asked.length, 3);
      assert.equal(pool.getState('badpw').kind, 'auth-failed');
      assert.deepEqual(states.map((x) => x.state.kind), ['connecting', 'auth-failed']);
    } finally {
      pool.dispose();
    }
  });

  test('a key the server does not know fails with auth-failed when no password is offered', async () => {
    const stranger = path.join(home, 'stranger_key');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', stranger]);
    const prompter = new ScriptedPrompter({ passwords: [undefined] });
    const e = await rejectsWith(
      SshConnection.connect(
        { jumps: [], target: hopFor(s, 'stranger', [stranger]) },
        { prompter, logger: new MemoryLogger(), knownHostsFiles: [knownHosts('stranger', s)], agent: null },
      ),
      'auth-failed',
    );
    assert.match(e.message, /stranger_key/);
  });

  test('pool: 20 concurrent commands share one connection, queued under MaxSessions', async () => {
    const pool = new ConnectionPool({ prompter: new ScriptedPrompter(), logger: new MemoryLogger(), knownHostsFiles: [knownHosts('many', s)], agent: null });
    const host: PoolHost = { name: 'many', jumps: [], target: hopFor(s, 'many') };
    const before = s.acceptedLogins();
    try {
      // 20 channels at once would exceed sshd's MaxSessions (10): without the queue some would be refused.
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => pool.exec(host, `sleep 0.2; echo ${i}`)));
      assert.deepEqual(
        results.map((r) => r.stdout.toString()),
        Array.from({ length: 20 }, (_, i) => `${i}\n`),
      );
      await eventually(() => s.connectionPids().length === 1, 'earlier tests\' connections gone on the server');
      await eventually(() => s.acceptedLogins() - before >= 1, 'login logged');
      assert.equal(s.acceptedLogins() - before, 1);
    } finally {
      pool.dispose();
    }
  });

  test('pool: an idle connection is closed and the state goes back to idle', async () => {
    const pool = new ConnectionPool({
      prompter: new ScriptedPrompter(),
      logger: new MemoryLogger(),
      knownHostsFiles: [knownHosts('idle', s)],
      agent: null,
      idleTimeoutMs: 200,
    });
    const states = stateLog(pool);
    try {
      await pool.exec({ name: 'idle', jumps: [], target: hopFor(s, 'idle') }, 'true');
      await eventually(() => pool.getState('idle').kind === 'idle', 'idle state');
      assert.deepEqual(states.map((x) => x.state.kind), ['connecting', 'connected', 'idle']);
      await eventually(() => s.connectionPids().length === 0, 'server side closed');
    } finally {
      pool.dispose();
    }
  });

  test('cancelling an exec closes its channel and stops the remote command', async () => {
    const markers = markerDir(s);
    const marker = path.join(markers, 'cancel-started');
    const pool = new ConnectionPool({ prompter: new ScriptedPrompter(), logger: new MemoryLogger(), knownHostsFiles: [knownHosts('cancel', s)], agent: null });
    const host: PoolHost = { name: 'cancel', jumps: [], target: hopFor(s, 'cancel') };
    const ac = new AbortController();
    try {
      const running = pool.exec(host, `touch ${marker}; exec sleep 4243`, { signal: ac.signal });
      await eventually(() => existsSync(marker), 'remote command started');
      ac.abort();
      await rejectsWith(running, 'cancelled');
      const lease = await pool.acquire(host);
      try {
        await eventually(() => lease.connection.openChannels === 0, 'channel closed');
      } finally {
        lease.dispose();
      }
      await eventually(() => {
        try {
          execFileSync('pgrep', ['-f', '^sleep 4243$']);
          return false;
        } catch {
          return true; // pgrep exits 1: no such process
        }
      }, 'remote sleep gone');
      // The connection is still good for the next command.
      assert.equal((await pool.exec(host, 'echo after')).stdout.toString(), 'after\n');
    } finally {
      pool.dispose();
    }
  });

  test('unreachable port gives unreachable, connection refused', async () => {
    const pool = new ConnectionPool({ prompter: new ScriptedPrompter(), logger: new MemoryLogger(), knownHostsFiles: [knownHosts('closed')], agent: null });
    try {
      // Port 1 on loopback: nothing listens there (root could bind it, nobody does).
      const e = await rejectsWith(
        pool.exec({ name: 'closed', jumps: [], target: { ...hopFor(s, 'closed'), port: 1 } }, 'true'),
        'unreachable',
      );
      assert.match(e.message, /connection refused/);
      assert.equal(pool.getState('closed').kind, 'unreachable');
    } finally {
      pool.dispose();
    }
  });
});

test('a server that accepts TCP but never speaks SSH times out as unreachable', async () => {
  const silent = createServer(() => {});
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const port = (silent.address() as { port: number }).port;
  try {
    const e = await rejectsWith(
      SshConnection.connect(
        { jumps: [], target: { alias: 'mute', hostname: '127.0.0.1', port, user: 'nobody', identityFiles: [], identitiesOnly: true } },
        { prompter: new ScriptedPrompter(), logger: new MemoryLogger(), knownHostsFiles: [knownHosts('mute')], agent: null, connectTimeoutMs: 300 },
      ),
      'unreachable',
    );
    assert.match(e.message, /mute: no answer within 0\.3 s during the SSH handshake/);
  } finally {
    silent.close();
  }
});

describe('host keys', () => {
  let s: TestSshd;
  before(async () => {
    s = await startSshd();
  });
  after(() => s.stop());

  test('unknown key: "no" refuses with host-key-unknown and writes nothing', async () => {
    const kh = knownHosts('unknown-no');
    const prompter = new ScriptedPrompter({ trustHostKey: false });
    const e = await rejectsWith(
      SshConnection.connect({ jumps: [], target: hopFor(s, 'newbox') }, { prompter, logger: new MemoryLogger(), knownHostsFiles: [kh], agent: null }),
      'host-key-unknown',
    );
    assert.deepEqual(prompter.asked, [`hostkey [127.0.0.1]:${s.port}`]);
    const fp = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', path.join(s.dir, 'ssh_host_ed25519_key.pub')], { encoding: 'utf8' }).split(' ')[1];
    assert.equal(prompter.hostKeyInfos[0].fingerprint, fp, 'the prompt shows the fingerprint ssh-keygen shows');
    assert.ok(e.message.includes(fp));
    assert.equal(readFileSync(kh, 'utf8'), '');
  });

  test('unknown key: "yes" appends it, and the next connect asks nothing', async () => {
    const kh = knownHosts('unknown-yes');
    const prompter = new ScriptedPrompter({ trustHostKey: true });
    const opts = { prompter, logger: new MemoryLogger(), knownHostsFiles: [kh], agent: null };
    const first = await SshConnection.connect({ jumps: [], target: hopFor(s, 'newbox') }, opts);
    first.close();
    assert.equal(readFileSync(kh, 'utf8'), `${s.knownHostsLine}\n`);
    const second = await SshConnection.connect({ jumps: [], target: hopFor(s, 'newbox') }, opts);
    second.close();
    assert.equal(prompter.asked.length, 1);
  });

  test('a changed key is refused, naming the file and line, without asking', async () => {
    const other = path.join(home, 'other_host_key');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', other]);
    const otherPub = readFileSync(`${other}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ');
    const kh = knownHosts('mismatch');
    writeFileSync(kh, `# managed by hand\nsomewhere ${otherPub}\n[127.0.0.1]:${s.port} ${otherPub}\n`);
    const prompter = new ScriptedPrompter({ trustHostKey: true });
    const pool = new ConnectionPool({ prompter, logger: new MemoryLogger(), knownHostsFiles: [kh], agent: null });
    try {
      const e = await rejectsWith(pool.exec({ name: 'changed', jumps: [], target: hopFor(s, 'changed') }, 'true'), 'host-key-mismatch');
      assert.ok(e.message.includes(`${kh} line 3`), e.message);
      assert.equal(e.detail.line, 3);
      assert.equal(e.detail.file, kh);
      assert.deepEqual(prompter.asked, []);
      assert.equal(pool.getState('changed').kind, 'host-key-mismatch');
    } finally {
      pool.dispose();
    }
  });

  test('a @revoked key is refused', async () => {
    const kh = knownHosts('revoked', s);
    writeFileSync(kh, `${s.knownHostsLine}\n@revoked * ${s.hostKeyPublic}\n`);
    const e = await rejectsWith(
      SshConnection.connect({ jumps: [], target: hopFor(s, 'rev') }, { prompter: new ScriptedPrompter({ trustHostKey: true }), logger: new MemoryLogger(), knownHostsFiles: [kh], agent: null }),
      'host-key-mismatch',
    );
    assert.match(e.message, /revoked/);
    assert.equal(e.detail.line, 2);
  });
});

describe('a server with several host keys', () => {
  let s: TestSshd;
  before(async () => {
    s = await startSshd({ hostKeyTypes: ['ed25519', 'rsa'] });
  });
  after(() => s.stop());

  test('the known key type is asked for first, so a host known by its RSA key connects silently', async () => {
    const rsaPub = readFileSync(path.join(s.dir, 'ssh_host_rsa_key.pub'), 'utf8').trim().split(' ').slice(0, 2).join(' ');
    const kh = knownHosts('rsa-only');
    writeFileSync(kh, `[127.0.0.1]:${s.port} ${rsaPub}\n`);
    const prompter = new ScriptedPrompter();
    const conn = await SshConnection.connect({ jumps: [], target: hopFor(s, 'multi') }, { prompter, logger: new MemoryLogger(), knownHostsFiles: [kh], agent: null });
    conn.close();
    assert.deepEqual(prompter.asked, []);
  });
});

describe('jump host', () => {
  let pair: Awaited<ReturnType<typeof startJumpPair>>;
  before(async () => {
    pair = await startJumpPair();
  });
  after(() => pair.stop());

  test('a command reaches the target through the jump host', async () => {
    const { jump, target } = pair;
    const pool = new ConnectionPool({ prompter: new ScriptedPrompter(), logger: new MemoryLogger(), knownHostsFiles: [knownHosts('jump', jump, target)], agent: null });
    try {
      const r = await pool.exec({ name: 'behind', jumps: [hopFor(jump, 'bastion')], target: hopFor(target, 'behind') }, 'echo via; echo $SSH_CONNECTION');
      assert.match(r.stdout.toString(), /^via\n127\.0\.0\.1 \d+ 127\.0\.0\.1 \d+\n$/);
      await eventually(() => /direct-tcpip/.test(jump.log()), 'jump host logged the forward');
      assert.match(jump.log(), new RegExp(`direct-tcpip.*port ${target.port}|target 127\\.0\\.0\\.1 port ${target.port}`));
      await eventually(() => target.acceptedLogins() >= 1, 'target login');
    } finally {
      pool.dispose();
    }
  });

  test('a target the jump host cannot reach fails as unreachable, naming the jump host', async () => {
    const { jump, target } = pair;
    const e = await rejectsWith(
      SshConnection.connect(
        { jumps: [hopFor(jump, 'bastion')], target: { ...hopFor(target, 'gone'), port: 1 } },
        { prompter: new ScriptedPrompter(), logger: new MemoryLogger(), knownHostsFiles: [knownHosts('jump-gone', jump, target)], agent: null },
      ),
      'unreachable',
    );
    assert.match(e.message, /jump host bastion could not connect to 127\.0\.0\.1:1/);
  });

  test('an unknown jump host key fails at the first hop, naming it', async () => {
    const { jump, target } = pair;
    const prompter = new ScriptedPrompter({ trustHostKey: false });
    const e = await rejectsWith(
      SshConnection.connect(
        { jumps: [hopFor(jump, 'bastion')], target: hopFor(target, 'behind') },
        { prompter, logger: new MemoryLogger(), knownHostsFiles: [knownHosts('jump-unknown', target)], agent: null },
      ),
      'host-key-unknown',
    );
    assert.match(e.message, /jump host bastion \(hop 1 of 2/);
    assert.equal(e.detail.hop, 'bastion');
  });
});

describe('dropped and frozen connections', () => {
  let s: TestSshd;
  before(async () => {
    s = await startSshd();
  });
  after(() => s.stop());

  test('a connection killed mid-command: the command fails, the pool reconnects for the next one', async () => {
    const marker = path.join(markerDir(s), 'drop-started');
    const pool = new ConnectionPool({
      prompter: new ScriptedPrompter(),
      logger: new MemoryLogger(),
      knownHostsFiles: [knownHosts('drop', s)],
      agent: null,
      backoffBaseMs: 50,
    });
    const states = stateLog(pool);
    const host: PoolHost = { name: 'drop', jumps: [], target: hopFor(s, 'drop') };
    try {
      const running = pool.exec(host, `touch ${marker}; sleep 30; echo never`);
      await eventually(() => existsSync(marker), 'command started');
      assert.equal(s.killConnections(), 1);
      const e = await rejectsWith(running, 'unreachable');
      assert.equal(e.detail.dropped, 'after-open', 'not idempotent, so not retried');
      assert.equal(pool.getState('drop').kind, 'unreachable');
      assert.equal((await pool.exec(host, 'echo back')).stdout.toString(), 'back\n');
      assert.deepEqual(states.map((x) => x.state.kind), ['connecting', 'connected', 'unreachable', 'connecting', 'connected']);
      assert.match((states[2].state as { message: string }).message, /Connection to drop lost: connection reset|Connection to drop lost/);
      // The first connect is a connect; the one after the drop says it is a reconnect (what the tree and the metrics
      // panel both word as "reconnecting (attempt 1)").
      assert.deepEqual([states[0].state, states[3].state], [{ kind: 'connecting', attempt: 1 }, { kind: 'connecting', attempt: 1, reconnect: true }]);
    } finally {
      pool.dispose();
    }
  });

  test('a host whose attempts gave up stays unreachable while a later round runs (gaveUp), until a connect succeeds', async () => {
    // Through a proxy of the test's own: closed, the host refuses connections; opened again on its port, it is back.
    let proxy = await startTcpProxy(s.port);
    const port = proxy.port;
    const kh = path.join(home, 'gaveup-known_hosts');
    writeFileSync(kh, `${s.knownHostsLine.replace(/^\[127\.0\.0\.1\]:\d+ /, `[127.0.0.1]:${port} `)}\n`);
    const pool = new ConnectionPool({ prompter: new ScriptedPrompter(), logger: new MemoryLogger(), knownHostsFiles: [kh], agent: null, backoffBaseMs: 20 });
    const states = stateLog(pool);
    const host: PoolHost = { name: 'gaveup', jumps: [], target: { ...hopFor(s, 'gaveup'), port } };
    try {
      assert.equal((await pool.exec(host, 'echo up')).stdout.toString(), 'up\n');
      await proxy.close();
      // The connection dropped; the pool's round of attempts gives up: unreachable.
      await eventually(() => pool.getState('gaveup').kind === 'unreachable', 'the drop seen');
      await rejectsWith(pool.exec(host, 'echo a'), 'unreachable');
      assert.equal(pool.getState('gaveup').kind, 'unreachable');
      const firstRound = states.length;
      // Asked again (a poll): a new round, every attempt of it marked as following a give-up, with its reason.
      await rejectsWith(pool.exec(host, 'echo b'), 'unreachable');
      const round = states.slice(firstRound).map((x) => x.state);
      const connecting = round.filter((x) => x.kind === 'connecting');
      assert.ok(connecting.length >= 2, JSON.stringify(round));
      for (const c of connecting) assert.match(String((c as { gaveUp?: string }).gaveUp), /refused|reach/i, JSON.stringify(c));
      // Back: the round that connects carries gaveUp until it succeeds; after that, a drop is a plain reconnect again.
      proxy = await startTcpProxy(s.port, { port });
      assert.equal((await pool.exec(host, 'echo back')).stdout.toString(), 'back\n');
      assert.equal(pool.getState('gaveup').kind, 'connected');
      const before = states.length;
      await proxy.close();
      await eventually(() => pool.getState('gaveup').kind === 'unreachable', 'the second drop seen');
      proxy = await startTcpProxy(s.port, { port });
      assert.equal((await pool.exec(host, 'echo again')).stdout.toString(), 'again\n');
      const after = states.slice(before).map((x) => x.state).filter((x) => x.kind === 'connecting');
      assert.ok(after.length >= 1);
      for (const c of after) assert.equal((c as { gaveUp?: string }).gaveUp, undefined, JSON.stringify(c));
    } finally {
      pool.dispose();
      await proxy.close();
    }
  });

  test('an idempotent command whose connection dies is retried once on a new connection', async () => {
    const markers = markerDir(s);
    const pool = new ConnectionPool({ prompter: new ScriptedPrompter(), logger: new MemoryLogger(), knownHostsFiles: [knownHosts('retry', s)], agent: null });
    const host: PoolHost = { name: 'retry', jumps: [], target: hopFor(s, 'retry') };
    const first = path.join(markers, 'retry-first');
    try {
      // The first run leaves a marker and hangs; the retry sees the marker and answers at once.
      const running = pool.exec(host, `if [ -e ${first} ]; then echo second run; else touch ${first}; sleep 30; fi`, { idempotent: true });
      await eventually(() => existsSync(first), 'first run started');
      s.killConnections();
      assert.equal((await running).stdout.toString(), 'second run\n');
    } finally {
      pool.dispose();
    }
  });

  test('a frozen server is detected by keepalive; the next command goes over a new connection', async () => {
    const logger = new MemoryLogger();
    const pool = new ConnectionPool({
      prompter: new ScriptedPrompter(),
      logger,
      knownHostsFiles: [knownHosts('frozen', s)],
      agent: null,
      keepaliveIntervalMs: 300,
      keepaliveCountMax: 2,
    });
    const states = stateLog(pool);
    const host: PoolHost = { name: 'frozen', jumps: [], target: hopFor(s, 'frozen') };
    try {
      await pool.exec(host, 'true');
      assert.equal(s.freezeConnections(), 1);
      // Nothing is sent by us: only keepalive can notice the silence.
      await eventually(() => pool.getState('frozen').kind === 'unreachable', 'keepalive noticed');
      const lost = states.find((x) => x.state.kind === 'unreachable')!.state as { message: string };
      assert.match(lost.message, /Keepalive timeout/);
      assert.equal((await pool.exec(host, 'echo fresh')).stdout.toString(), 'fresh\n');
    } finally {
      s.thawConnections();
      pool.dispose();
    }
  });
});

describe('keyboard-interactive (sshd with PAM)', () => {
  let s: TestSshd;
  before(async () => {
    s = await startSshd({ usePam: true, kbdInteractiveAuthentication: true });
  });
  after(() => s.stop());

  test('the one-time-code style prompt is answered once for several commands', async () => {
    const prompter = new ScriptedPrompter({ kbd: [[s.password]] });
    const pool = new ConnectionPool({ prompter, logger: new MemoryLogger(), knownHostsFiles: [knownHosts('kbd', s)], agent: null });
    const host: PoolHost = { name: 'kbd', jumps: [], target: hopFor(s, 'kbd', []) };
    try {
      for (const i of [1, 2, 3]) assert.equal((await pool.exec(host, `echo ${i}`)).stdout.toString(), `${i}\n`);
      assert.deepEqual(prompter.asked, ['kbd Password:']);
    } finally {
      pool.dispose();
    }
  });
});
