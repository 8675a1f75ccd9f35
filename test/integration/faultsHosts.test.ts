/**
 * Faults of the hosts themselves, against real sshd servers: the host key changes between two connections (the
 * reconnect is refused and says the key changed, without asking), and a jump host that freezes or goes away
 * (the error names the hop that failed, both for the command in flight and for the reconnect).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ConnectionPool, type PoolHost, type StateChange } from '../../src/core/ssh/pool';
import type { SshConnection } from '../../src/core/ssh/connection';
import type { ResolvedHop } from '../../src/core/ssh/types';
import { startJumpPair, startSshd, type TestSshd } from '../harness/sshd';
import { ScriptedPrompter } from '../harness/testHost';
import { eventually, rejectsWith } from '../harness/assertKind';
import { changeHostKey, freezeOurConnections, killOurConnections } from '../harness/faults';
import { silentLogger } from '../builders/pool';

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-faults-home-'));
after(() => fs.rmSync(home, { recursive: true, force: true }));

function hopFor(s: TestSshd, alias: string): ResolvedHop {
  return { alias, hostname: s.host, port: s.port, user: s.user, identityFiles: [s.clientKeyPath], identitiesOnly: true };
}

function knownHosts(name: string, ...servers: TestSshd[]): string {
  const p = path.join(home, `${name}_known_hosts`);
  fs.writeFileSync(p, servers.map((s) => `${s.knownHostsLine}\n`).join(''));
  return p;
}

/** Sessions sshd started so far (LogLevel VERBOSE logs each exec request). */
function sessions(s: TestSshd): number {
  return (s.log().match(/Starting session: command/g) ?? []).length;
}

function makePool(knownHostsFile: string, prompter = new ScriptedPrompter({ trustHostKey: true })) {
  const pool = new ConnectionPool({
    prompter,
    logger: silentLogger,
    knownHostsFiles: [knownHostsFile],
    agent: null,
    connectTimeoutMs: 5000,
    keepaliveIntervalMs: 250,
    keepaliveCountMax: 2,
    backoffBaseMs: 50,
    reconnectAttempts: 2,
  });
  const states: StateChange[] = [];
  pool.onDidChangeState((s) => states.push(s));
  return { pool, states, prompter };
}

describe('the host key changes between two connections', () => {
  let s: TestSshd;
  before(async () => {
    s = await startSshd();
  });
  after(() => s?.stop());

  test('the reconnect is refused as host-key-mismatch, names the known_hosts line, asks nothing, writes nothing', async () => {
    const file = knownHosts('rekey', s);
    const { pool, states, prompter } = makePool(file);
    const host: PoolHost = { name: 'rekeyed', jumps: [], target: hopFor(s, 'rekeyed') };
    try {
      assert.equal((await pool.exec(host, 'echo first')).stdout.toString(), 'first\n');
      const newKey = await changeHostKey(s);
      assert.notEqual(newKey, s.hostKeyPublic, 'the server has another key now');
      // The open connection keeps its session keys; the next connection meets the new host key.
      assert.equal(killOurConnections(s), 1);
      await eventually(() => pool.getState('rekeyed').kind !== 'connected', 'the pool saw the drop');
      const e = await rejectsWith(pool.exec(host, 'echo second'), 'host-key-mismatch');
      assert.match(e.message, /host key of rekeyed has changed/);
      assert.match(e.message, new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} line 1`));
      assert.equal(e.detail.hop, 'rekeyed');
      assert.equal(pool.getState('rekeyed').kind, 'host-key-mismatch', 'the tree shows why, not just "unreachable"');
      assert.ok(states.some((x) => x.state.kind === 'host-key-mismatch'));
      assert.deepEqual(prompter.asked, [], 'a changed key is never offered for trust');
      assert.equal(fs.readFileSync(file, 'utf8'), `${s.knownHostsLine}\n`, 'known_hosts untouched');
      // And it stays refused: asking again does not wear the check down.
      await rejectsWith(pool.exec(host, 'echo third', { idempotent: true }), 'host-key-mismatch');
    } finally {
      pool.dispose();
    }
  });
});

describe('a slow client on a busy connection', () => {
  let s: TestSshd;
  before(async () => {
    s = await startSshd();
  });
  after(() => s?.stop());

  test('keepalive answers queued behind megabytes of output do not get a live connection declared dead', async () => {
    const { pool, states } = makePool(knownHosts('busy', s));
    const host: PoolHost = { name: 'busy', jumps: [], target: hopFor(s, 'busy') };
    const lease = await pool.acquire(host);
    try {
      // A loaded extension host: every chunk costs 40 ms to handle, so the server's answers to keepalive pings
      // (sent every 250 ms, two missed = dead) wait behind megabytes of data while data keeps arriving.
      const bytes = 6 * 1024 * 1024;
      const ch = await (lease.connection as SshConnection).openExec(`head -c ${bytes} /dev/zero`);
      let got = 0;
      await new Promise<void>((resolve, reject) => {
        ch.on('data', (chunk: Buffer) => {
          got += chunk.length;
          const until = Date.now() + 40;
          while (Date.now() < until) {
            // busy, on purpose
          }
        });
        ch.on('close', () => resolve());
        ch.on('error', reject);
      });
      assert.equal(got, bytes, 'every byte arrived');
      assert.equal(lease.connection.isClosed, false, 'the connection is still up');
      assert.deepEqual(states.filter((x) => x.state.kind === 'unreachable'), [], 'never declared lost');
    } finally {
      lease.dispose();
      pool.dispose();
    }
  });
});

describe('the jump host', () => {
  let pair: Awaited<ReturnType<typeof startJumpPair>>;
  before(async () => {
    pair = await startJumpPair();
  });
  after(() => pair?.stop());

  const behind = (): PoolHost => ({ name: 'behind', jumps: [hopFor(pair.jump, 'bastion')], target: hopFor(pair.target, 'behind') });

  test('frozen: keepalive notices, the command in flight fails naming the jump host, the next one reconnects', async () => {
    const { pool, states } = makePool(knownHosts('jump-frozen', pair.jump, pair.target));
    try {
      await pool.exec(behind(), 'true');
      const started = sessions(pair.target);
      const running = pool.exec(behind(), 'sleep 30; echo never');
      running.catch(() => undefined);
      await eventually(() => sessions(pair.target) > started, 'the command runs on the target');
      // Freeze the jump host's side only: the target behind it is fine, the route to it is not.
      const frozen = freezeOurConnections(pair.jump);
      assert.equal(frozen.count, 1);
      try {
        const e = await rejectsWith(running, 'unreachable');
        assert.match(e.message, /jump host bastion \(hop 1 of 2, for behind\)/);
        assert.equal(e.detail.hop, 'bastion');
        assert.match(e.message, /keepalive/i);
        const lost = states.find((x) => x.state.kind === 'unreachable');
        assert.match((lost?.state as { message: string }).message, /jump host bastion/);
      } finally {
        frozen.kill();
      }
      assert.equal((await pool.exec(behind(), 'echo again')).stdout.toString(), 'again\n');
    } finally {
      pool.dispose();
    }
  });

  test('gone: the command in flight and every reconnect fail as unreachable, naming the jump host and its address', async () => {
    const { pool, states } = makePool(knownHosts('jump-gone', pair.jump, pair.target));
    try {
      await pool.exec(behind(), 'true');
      const started = sessions(pair.target);
      const running = pool.exec(behind(), 'sleep 30; echo never');
      running.catch(() => undefined);
      await eventually(() => sessions(pair.target) > started, 'the command runs on the target');
      const jumpPort = pair.jump.port;
      await pair.jump.stop(); // the jump host's sshd and its connections, gone
      const e = await rejectsWith(running, 'unreachable');
      assert.match(e.message, /jump host bastion \(hop 1 of 2, for behind\)/, e.message);
      assert.equal(e.detail.hop, 'bastion');

      const again = await rejectsWith(pool.exec(behind(), 'echo again', { idempotent: true }), 'unreachable');
      assert.match(again.message, new RegExp(`Cannot reach jump host bastion \\(hop 1 of 2, for behind\\) at 127\\.0\\.0\\.1:${jumpPort}: connection refused`));
      assert.equal(again.detail.hop, 'bastion');
      const last = states[states.length - 1].state;
      assert.equal(last.kind, 'unreachable');
      assert.match((last as { message: string }).message, /jump host bastion/);
    } finally {
      pool.dispose();
    }
  });
});
