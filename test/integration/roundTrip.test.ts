/**
 * A link's round trip is measured on the link (src/core/ssh/roundTrip.ts), and the number of OpenSSH streams a pull
 * takes follows from it (transfer/download.ts streamsForRoundTrip): over loopback one stream every time, through a
 * 50 ms link several, however slow the remote login shell is to start.
 *
 * Every command on the server starts 40 ms late (sshd_config ForceCommand: a script that sleeps, then runs the command
 * as the login shell would), as on a cluster whose ~/.bashrc loads a module system or conda (Debian's bash reads
 * ~/.bashrc for every command sshd runs: its SSH_SOURCE_BASHRC): a round trip timed with remote commands counts that
 * start as latency and takes loopback for a long link. sshd logs at DEBUG1, so the test sees which requests reached it
 * (serverloop.c server_input_global_request logs each `cancel-tcpip-forward`; server_input_channel_open each channel).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import type { ConnectionPool, PoolHost } from '../../src/core/ssh/pool';
import type { Logger, ResolvedHop } from '../../src/core/ssh/types';
import type { Checkpoint, TargetRef } from '../../src/core/types';
import { download, planDownload } from '../../src/core/transfer';
import { streamsForRoundTrip } from '../../src/core/transfer/download';
import { startSshd, type TestSshd } from '../harness/sshd';
import { startTcpProxy, type TcpProxy } from '../harness/tcpProxy';
import { flatCheckpoint, knownHostsWithProxies, testPool } from '../builders/pool';

const MiB = 1 << 20;
const HOST: TargetRef = { kind: 'host', id: '' };
/** Pulls of the same file over loopback, each with a pool of its own (a new link, measured anew). */
const RUNS = 5;
/** The delayed link's round trip (the proxy delays each direction by half). */
const LONG_RTT_MS = 50;
/** What the server's start costs each command (the ForceCommand's sleep). */
const SLOW_LOGIN_MS = 40;

let s: TestSshd;
let dir: string;
let proxy: TcpProxy;
let knownHosts: string;
let ckpt: Checkpoint;
const pools: ConnectionPool[] = [];

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-rtt-'));
  fs.chmodSync(dir, 0o755);
  const slow = path.join(dir, 'slow-login');
  fs.writeFileSync(slow, `#!/bin/bash\nsleep ${SLOW_LOGIN_MS / 1000}\nexec /bin/bash -c "$SSH_ORIGINAL_COMMAND"\n`, { mode: 0o755 });
  s = await startSshd({ logLevel: 'DEBUG1', extraConfig: [`ForceCommand ${slow}`] });
  proxy = await startTcpProxy(s.port, { delayMs: LONG_RTT_MS / 2, maxBufferedBytes: 64 * MiB });
  knownHosts = knownHostsWithProxies(s, dir, proxy.port);
  // Past two pieces of 64 MiB, so the round trip decides; sparse, so it costs no disk and little time to hash.
  const file = path.join(dir, 'model_step_5.pt');
  execFileSync('truncate', ['-s', String(129 * MiB), file]);
  fs.chmodSync(file, 0o644);
  ckpt = flatCheckpoint(file, 5);
});
after(async () => {
  for (const p of pools) p.dispose();
  await proxy?.close();
  await s?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

function pool(): ConnectionPool {
  const p = testPool({ knownHostsFile: knownHosts }, { agent: null, backoffBaseMs: 50 });
  pools.push(p);
  return p;
}

/** The test server, directly or through the delaying proxy; `openssh` gives it a config fact only OpenSSH honours. */
function host(name: string, via: 'loopback' | 'long', openssh = false): PoolHost {
  const target: ResolvedHop = {
    alias: name,
    hostname: s.host,
    port: via === 'long' ? proxy.port : s.port,
    user: s.user,
    identityFiles: [s.clientKeyPath],
    identitiesOnly: true,
    ...(openssh ? { gssapi: { where: 'test' } } : {}),
  };
  if (!openssh) return { name, jumps: [], target };
  // The master reads the alias's HostName from an ssh config, as from the user's (openssh/connection.ts masterArgs).
  const configFile = path.join(dir, `ssh_config_${name}`);
  fs.writeFileSync(configFile, `Host ${name}\n  HostName ${s.host}\n`);
  return { name, jumps: [], target, openssh: { configFile, overrides: { user: s.user, port: target.port, identityFiles: [s.clientKeyPath] } } };
}

const count = (re: RegExp): number => (s.log().match(re) ?? []).length;
const probesSeen = (): number => count(/cancel-tcpip-forward addr remote-runs\.round-trip-probe/g);
const channelsSeen = (): number => count(/server_input_channel_open: ctype /g);

describe('the round trip, measured on the link', () => {
  test('ssh2: three global requests that open no channel, measured once per connection; loopback is under a stream\'s threshold, 50 ms is 50 ms', async () => {
    const p = pool();
    const lease = await p.acquire(host('near', 'loopback'));
    try {
      const probes = probesSeen();
      const channels = channelsSeen();
      const rtt = await lease.connection.roundTripMs();
      assert.equal(probesSeen() - probes, 3, 'three probes reached sshd');
      assert.equal(channelsSeen() - channels, 0, 'no channel opened: no session, no process');
      assert.ok(rtt < 5, `loopback round trip ${rtt.toFixed(2)} ms, with a ${SLOW_LOGIN_MS} ms login shell`);
      assert.equal(streamsForRoundTrip(rtt), 1);
      assert.equal(await lease.connection.roundTripMs(), rtt, 'the same figure, kept with the connection');
      assert.equal(probesSeen() - probes, 3, 'not measured again');
    } finally {
      lease.dispose();
    }
    const far = await p.acquire(host('far', 'long'));
    try {
      const rtt = await far.connection.roundTripMs();
      assert.ok(rtt >= LONG_RTT_MS && rtt < 2 * LONG_RTT_MS + 20, `delayed link round trip ${rtt.toFixed(1)} ms`);
    } finally {
      far.dispose();
    }
  });

  test('OpenSSH transport: connections to a local forward of the master open no session; loopback is under the threshold, 50 ms is 50 ms', async () => {
    const p = pool();
    const near = host('near-os', 'loopback', true);
    assert.equal(p.transportFor(near).kind, 'openssh');
    const lease = await p.acquire(near);
    try {
      const sessions = count(/server_input_channel_open: ctype session/g);
      const forwards = count(/server_input_channel_open: ctype direct-tcpip/g);
      const rtt = await lease.connection.roundTripMs();
      assert.equal(count(/server_input_channel_open: ctype session/g) - sessions, 0, 'no session: no process');
      assert.equal(count(/server_input_channel_open: ctype direct-tcpip/g) - forwards, 3, 'three forwards asked for');
      assert.ok(rtt < 5, `loopback round trip ${rtt.toFixed(2)} ms`);
      assert.equal(await lease.connection.roundTripMs(), rtt, 'kept with the connection');
    } finally {
      lease.dispose();
    }
    const far = await p.acquire(host('far-os', 'long', true));
    try {
      const rtt = await far.connection.roundTripMs();
      assert.ok(rtt >= LONG_RTT_MS - 5 && rtt < 2 * LONG_RTT_MS + 20, `delayed link round trip ${rtt.toFixed(1)} ms`);
    } finally {
      far.dispose();
    }
  });
});

describe('the streams a pull takes follow the link', () => {
  /** One size-only pull of the 129 MiB file with a fresh pool; the download's line saying how many streams and why. */
  async function pullOnce(h: PoolHost, run: string): Promise<string> {
    const said: string[] = [];
    const logger: Logger = { info: (m) => said.push(m), warn: (m) => said.push(m), error: (m) => said.push(m) };
    const plan = await planDownload({ pool: pool(), host: h, target: HOST }, ckpt, { root: path.join(dir, 'pulled'), run });
    const res = await download(plan, { client: 'openssh', verify: 'size', logger });
    assert.equal(res.client, 'openssh');
    assert.equal(fs.statSync(res.files[0].localPath).size, 129 * MiB);
    fs.rmSync(path.join(dir, 'pulled'), { recursive: true, force: true });
    const line = said.find((m) => /^download of \S+: \d+ OpenSSH streams? per file/.test(m));
    assert.ok(line, said.join('\n'));
    return line;
  }

  test(`over loopback: one stream, ${RUNS} pulls out of ${RUNS}, each with a new link`, { timeout: 300_000 }, async () => {
    const lines: string[] = [];
    for (let i = 0; i < RUNS; i++) lines.push(await pullOnce(host('near', 'loopback'), `near${i}`));
    for (const l of lines) assert.match(l, /: 1 OpenSSH stream per file \(round trip \d+\.\d ms; at most 8\)$/, lines.join('\n'));
  });

  test('over loopback on the OpenSSH transport (its master carries the streams): one stream, 3 pulls out of 3', { timeout: 300_000 }, async () => {
    const lines: string[] = [];
    for (let i = 0; i < 3; i++) lines.push(await pullOnce(host('near-os', 'loopback', true), `near-os${i}`));
    for (const l of lines) assert.match(l, /: 1 OpenSSH stream per file \(round trip \d+\.\d ms; at most 8\)$/, lines.join('\n'));
  });

  test('through a 50 ms link: several streams', { timeout: 300_000 }, async () => {
    const line = await pullOnce(host('far', 'long'), 'far');
    const m = /: (\d+) OpenSSH streams per file \(round trip (\d+\.\d) ms; at most 8\)$/.exec(line);
    assert.ok(m, line);
    assert.equal(Number(m[1]), Math.min(8, streamsForRoundTrip(Number(m[2]))));
    assert.ok(Number(m[1]) >= 4, line);
  });
});
