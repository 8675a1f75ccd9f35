/**
 * The sshd process serving our connection killed (SIGKILL) or frozen (SIGSTOP) while each kind of operation is in
 * flight: a listing, a metrics tail round, a download, an eval start. "In flight" is made certain by a gate in
 * front of the pct shim (test/harness/faults.ts): the remote command has reached the container runtime and waits
 * there when the fault is injected. A frozen connection is only noticed by keepalive (short intervals here).
 *
 * Each operation completes on a new connection: listings, tails and downloads are safe to repeat; an eval launch
 * whose answer was lost is looked up by its id and launched again only if it never ran (held before the container
 * runtime, or after it ran with its answer lost: exactly one eval either way). Nothing hangs: every await here is
 * bounded by the keepalive and the test's own timeout.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ConnectionPool, type StateChange } from '../../src/core/ssh/pool';
import { HostDirectory } from '../../src/core/hosts';
import { RemoteRunsCore, runsOf } from '../../src/core/service';
import type { Executor } from '../../src/core/remote';
import type { Checkpoint, HostConfig, TargetRef } from '../../src/core/types';
import { download, planDownload } from '../../src/core/transfer';
import { EvalService } from '../../src/core/eval/service';
import { parseEvalProfile } from '../../src/core/eval/profiles';
import { RunFeed } from '../../src/core/metrics/follow/runFeed';
import { toRunRef } from '../../src/core/runRef';
import { startTestHost, ScriptedPrompter, type TestHost } from '../harness/testHost';
import { TEST_USER } from '../harness/sshd';
import { eventually, rejectsWith } from '../harness/assertKind';
import { freezeOurConnections, installGate, killOurConnections, strikeMidDownload, type CommandGate } from '../harness/faults';
import { silentLogger } from '../builders/pool';

const PCT: TargetRef = { kind: 'pct', id: '200' };
const MiB = 1 << 20;

let host: TestHost;
let gate: CommandGate;
let local: string;

/** A fresh pool and the faces over it; keepalive short, so a frozen server is noticed within about a second. */
function setup(hostConfig: HostConfig = host.hostConfig('testbox')) {
  const pool = new ConnectionPool({
    prompter: new ScriptedPrompter(),
    logger: silentLogger,
    knownHostsFiles: [host.knownHostsFile],
    connectTimeoutMs: 5000,
    keepaliveIntervalMs: 250,
    keepaliveCountMax: 2,
    backoffBaseMs: 50,
  });
  const states: StateChange[] = [];
  pool.onDidChangeState((s) => states.push(s));
  const hosts: HostConfig[] = [hostConfig];
  const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  const resolved = dir.resolve(hosts[0]);
  const core = new RemoteRunsCore({ hosts: () => hosts, executorFor: (h): Executor => pool.executor(dir.resolve(h), { idempotent: true }) });
  const evals = new EvalService({
    executorFor: (_name, { idempotent }) => pool.executor(resolved, { idempotent }),
    localStateDir: path.join(local, 'eval-state'),
  });
  return { pool, states, core, evals, resolved };
}

type Fault = 'killed' | 'frozen';

/**
 * Inject the fault into our connection(s) while the gate holds a command, then let commands through. Returns a
 * cleanup that makes sure nothing frozen is left behind (frozen processes are killed, not thawed: a thawed gate
 * would go on to run the command it held).
 */
async function inject(fault: Fault, pool: ConnectionPool): Promise<() => void> {
  await gate.waitEntered();
  if (fault === 'killed') {
    assert.ok(killOurConnections(host.sshd) >= 1, 'a connection of ours was killed');
    gate.open();
    return () => undefined;
  }
  // Only keepalive can notice: we send nothing and the server answers nothing. Noticed is read from the pool's state
  // events, not by polling its state: the pool reconnects at once for the operation in flight, and a poll could look
  // only before and after the short moment it was not connected (it did, once in three runs, and waited in vain).
  let noticed = false;
  const sub = pool.onDidChangeState((s) => {
    if (s.host === 'testbox' && s.state.kind !== 'connected') noticed = true;
  });
  const frozen = freezeOurConnections(host.sshd);
  try {
    assert.ok(frozen.count >= 1, 'a connection of ours was frozen');
    await eventually(() => noticed, 'keepalive noticed the frozen server');
  } finally {
    sub.dispose();
  }
  gate.open();
  return () => frozen.kill();
}

function lostThen(states: StateChange[], fault: Fault): void {
  const lost = states.find((s) => s.state.kind === 'unreachable');
  assert.ok(lost, `the pool reported the lost connection: ${JSON.stringify(states)}`);
  if (fault === 'frozen') assert.match((lost.state as { message: string }).message, /keepalive/i);
}

before(async () => {
  host = await startTestHost();
  gate = installGate(path.join(host.dir, 'bin'), 'pct');
  local = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-faults-'));
  // The eval folder in the container is the trainer's (the test user's).
  const evalsRoot = path.join(host.containers.pct200.workspace, '.remote-runs');
  fs.mkdirSync(evalsRoot, { recursive: true });
  execFileSync('chown', ['-R', `${TEST_USER}:${TEST_USER}`, evalsRoot]);
});
after(async () => {
  gate?.dispose();
  await host?.stop();
  fs.rmSync(local, { recursive: true, force: true });
});

for (const fault of ['killed', 'frozen'] as const) {
  describe(`the connection ${fault} during`, () => {
    test('a listing: it completes on a new connection with the whole tree', async () => {
      const { pool, states, core } = setup();
      try {
        await core.listTarget('testbox', PCT);
        const logins = host.sshd.acceptedLogins();
        gate.arm();
        const listing = core.listTarget('testbox', PCT);
        const cleanup = await inject(fault, pool);
        try {
          const run = runsOf(await listing).find((r) => r.path === '/workspace');
          assert.ok(run, 'the story run is listed');
          assert.deepEqual(run.checkpoints.map((c) => c.step ?? -1).sort((a, b) => a - b), host.storySteps);
        } finally {
          cleanup();
        }
        lostThen(states, fault);
        assert.ok(host.sshd.acceptedLogins() > logins, 'a new connection was made');
        assert.equal(pool.getState('testbox').kind, 'connected');
      } finally {
        pool.dispose();
      }
    });

    test('a metrics tail round: the lines appended meanwhile arrive once each, and the feed keeps following', async () => {
      const { pool, states, core } = setup();
      const log = path.join(host.containers.pct200.workspace, 'logs', 'train.jsonl');
      const listing = await core.listTarget('testbox', PCT);
      const run = runsOf(listing).find((r) => r.path === '/workspace')!;
      const feed = new RunFeed(toRunRef('testbox', listing.target, run), { executor: () => core.executor('testbox'), intervalMs: () => 60_000 });
      try {
        await feed.pollNow();
        const before = feed.series().get('loss')!.length;
        const firstStep = fault === 'killed' ? 2_000_000 : 3_000_000;
        fs.appendFileSync(log, [0, 1, 2].map((i) => `${JSON.stringify({ step: firstStep + i, loss: i })}\n`).join(''));
        gate.arm();
        const round = feed.pollNow();
        const cleanup = await inject(fault, pool);
        try {
          assert.equal(await round, true, 'the round that met the fault brought the new lines');
        } finally {
          cleanup();
        }
        const loss = feed.series().get('loss')!;
        assert.equal(loss.length, before + 3, 'each new line once');
        assert.deepEqual([...loss.x.subarray(before)], [firstStep, firstStep + 1, firstStep + 2]);
        assert.equal(feed.status, 'following');
        lostThen(states, fault);
      } finally {
        feed.dispose();
        pool.dispose();
      }
    });

    test('a download: it resumes on a new connection and the bytes are exact', async () => {
      // Through a 16 MiB/s link of the test's own, so the 48 MiB take three seconds and the trigger a third of the way
      // in provably comes with ranges still to fetch (straight over loopback, the whole file could arrive before the
      // first throttled progress report).
      const link = await host.throughProxy({ rateBytesPerSec: 16 * MiB });
      const { pool, states, resolved } = setup(link.hostConfig('testbox'));
      const remote = `/workspace/fault-dl-${fault}/model_step_7.pt`;
      const onDisk = path.join(host.containers.pct200.rootfs, remote);
      const data = randomBytes(48 * MiB);
      fs.mkdirSync(path.dirname(onDisk), { recursive: true });
      fs.writeFileSync(onDisk, data);
      execFileSync('chmod', ['-R', 'a+rX', path.dirname(onDisk)]);
      const ckpt: Checkpoint = { name: 'model_step_7.pt', kind: 'step' as const, step: 7, layout: 'flat', path: remote, isDir: false, bytes: 0, mtime: 0, files: [], newest: true };
      try {
        const plan = await planDownload({ pool, host: resolved, target: PCT }, ckpt, { root: local, run: `dl-${fault}` });
        let cleanup: (() => void) | undefined;
        let injecting: Promise<void> | undefined;
        // A third of the way in, the next range's command is held at the gate and the fault strikes.
        const strike = strikeMidDownload(link.proxy, 1 / 3, () => {
          gate.arm();
          injecting = inject(fault, pool).then((c) => void (cleanup = c));
        });
        // ssh2's own connection: the fault finds and hits it by its socket (OpenSSH's connection: transferOpenssh).
        const res = await download(plan, { client: 'ssh2', concurrency: 1, segmentBytes: 4 * MiB, onProgress: strike.onProgress });
        await injecting;
        cleanup?.();
        assert.ok(strike.struck && injecting, 'the fault was injected mid-download');
        assert.ok(strike.linkBytesAt < data.length, `the download was in flight: ${strike.linkBytesAt} bytes had crossed the link`);
        assert.ok(res.retries >= 1, 'the download retried after the fault');
        assert.equal(createHash('sha256').update(fs.readFileSync(plan.files[0].localPath)).digest('hex'), createHash('sha256').update(data).digest('hex'));
        lostThen(states, fault);
      } finally {
        gate.open();
        pool.dispose();
        await link.proxy.close();
      }
    });

    for (const position of ['before', 'after'] as const) {
      const when = position === 'before' ? 'before the launch ran' : 'after the launch ran, its answer lost';
      test(`an eval start, ${when}: it completes after the reconnect with exactly one eval`, async () => {
        const { pool, evals } = setup();
        const profile = parseEvalProfile({ name: `fault-${fault}-${position}`, command: 'echo eval of ${step}' });
        const step = host.storySteps[host.storySteps.length - 1];
        const subject = { host: 'testbox', target: PCT, run: { name: 'story', path: '/workspace' }, checkpoint: { path: `/workspace/checkpoints/step_${step}`, step } };
        try {
          const place = evals.place(profile, subject);
          const before = (await evals.list(place)).filter((r) => r.profile === profile.name).length;
          assert.equal(before, 0);
          gate.arm(position);
          const start = evals.start(profile, subject);
          start.catch(() => undefined); // it may settle while the fault is still being injected; checked below
          const cleanup = await inject(fault, pool);
          const evalsDir = path.join(host.containers.pct200.workspace, '.remote-runs', 'evals');
          const ran = fs.existsSync(evalsDir) ? fs.readdirSync(evalsDir).filter((n) => n.includes(`-${profile.name}-`)).length : 0;
          assert.equal(ran, position === 'after' ? 1 : 0, position === 'after' ? 'the lost launch had run' : 'the lost launch never ran');
          let started;
          try {
            started = await start;
          } finally {
            cleanup();
          }
          // The lost launch either never ran (launched again) or ran (found, not launched again): one eval either way.
          const mine = (await evals.list(place)).filter((r) => r.profile === profile.name);
          assert.deepEqual(mine.map((r) => r.id), [started.id], 'exactly one eval, the one start() returned');
          const end = await evals.follow(started.place, started.id, started.meta, { pollMs: 100, retryMs: 100 });
          assert.equal(end.state, 'passed');
        } finally {
          gate.open();
          pool.dispose();
        }
      });
    }
  });
}
