/**
 * `remote-runs metrics` (issue 15, item 6): a run's curves headless, from the built CLI against the real test sshd,
 * read by the same RunFeed the panels use. Summary, JSON, every point as CSV, and --follow printing points appended
 * while it runs, until SIGINT.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { shortestFloat32 } from '../../src/core/metrics/series/compact';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { startTestHost, type TestHost } from '../harness/testHost';
import { CLI, ensureBuiltCli, runBuiltCli } from '../harness/builtCli';

let host: TestHost;
let config: string;
let root: string;

function cli(args: string[]): { code: number; stdout: string; stderr: string } {
  return runBuiltCli([...args, '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome, 60_000);
}

const line = (step: number, loss: number, extra: Record<string, number> = {}): string => `${JSON.stringify({ step, loss, ...extra })}\n`;

before(async () => {
  ensureBuiltCli();
  host = await startTestHost();
  root = path.join(host.dir, 'metrics-cli');
  // expA/seed1 and expB/seed1: two runs with the same last folder, addressed by their unique paths.
  for (const [exp, scale] of [['expA', 1], ['expB', 10]] as const) {
    const run = path.join(root, exp, 'seed1');
    fs.mkdirSync(path.join(run, 'logs'), { recursive: true });
    let text = '';
    for (let s = 10; s <= 100; s += 10) text += line(s, scale / s, s % 20 === 0 ? { 'eval/acc': s / 1000 } : {});
    // A resume from step 50: the step goes back, one more segment; its steps 50 and 60 replace the first ones' 50…100.
    for (let s = 50; s <= 60; s += 10) text += line(s, scale / (s + 1));
    text += '{"step": 70, "loss": 0.'; // half-written last line: not a point, not an error
    fs.writeFileSync(path.join(run, 'logs', 'train.jsonl'), text);
  }
  const live = path.join(root, 'live');
  fs.mkdirSync(live, { recursive: true });
  fs.writeFileSync(path.join(live, 'metrics.jsonl'), line(1, 0.5));
  // Keras' CSVLogger: epochs, no step column.
  const keras = path.join(root, 'keras-run', 'logs');
  fs.mkdirSync(keras, { recursive: true });
  fs.writeFileSync(path.join(keras, 'training.log'), 'epoch,loss\n0,0.9\n1,0.5\n2,0.25\n');
  const weightsOnly = path.join(root, 'weights-only', 'checkpoints', 'step_5');
  fs.mkdirSync(weightsOnly, { recursive: true });
  fs.writeFileSync(path.join(weightsOnly, 'model.pt'), 'x');
  execFileSync('chmod', ['-R', 'a+rwX', root]);
  config = path.join(host.dir, 'metrics-cli.json');
  fs.writeFileSync(config, JSON.stringify({ hosts: [host.hostConfig('box', { runRoots: [root], targets: ['host'] })] }));
});
after(async () => {
  await host?.stop();
});

describe('remote-runs metrics', () => {
  test('text: each series with its point count and first and last (step, value); the resume is said', () => {
    const r = cli(['metrics', 'box/host/expA/seed1']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^remote-runs: loss: resumed at step 50: 6 earlier points replaced$/m);
    const rows = r.stdout.trim().split('\n');
    assert.match(rows[0], /^series\s+points\s+first step: value\s+last step: value$/);
    const loss = rows.find((l) => l.startsWith('loss '));
    assert.ok(loss, r.stdout);
    assert.match(loss, /^loss\s+6\s+10: 0\.1\s+60: 0\.016393442\s+\(2 segments: resumed\)$/, '1/61 to float32 precision, its shortest decimal');
    assert.match(rows.find((l) => l.startsWith('eval/acc')) ?? '', /^eval\/acc\s+5\s+20: 0\.02\s+100: 0\.1$/);
  });

  test('--json: the same facts as an object; the other seed1 is its own run', () => {
    const a = JSON.parse(cli(['metrics', 'box/host/expA/seed1', '--json']).stdout);
    const b = JSON.parse(cli(['metrics', 'box/host/expB/seed1', '--json']).stdout);
    assert.equal(a.run.name, 'expA/seed1');
    assert.equal(b.run.name, 'expB/seed1');
    const loss = (j: { series: { name: string; first?: unknown }[] }) => j.series.find((s) => s.name === 'loss');
    assert.deepEqual(loss(a), { name: 'loss', points: 6, first: { step: 10, value: 0.1 }, last: { step: 60, value: shortestFloat32(Math.fround(1 / 61)) }, segments: 2, restarts: [{ step: 50, replaced: 6 }] });
    assert.deepEqual(loss(b)?.first, { step: 10, value: 1 });
  });

  test('--csv: every point, as logged to float32 precision (the shortest decimal of the value held), in file order, the resumed process winning where steps repeat', () => {
    const r = cli(['metrics', 'box/host/expA/seed1', '--csv']);
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout.trim().split('\n');
    assert.equal(rows[0], 'series,step,value,time');
    const loss = rows.filter((l) => l.startsWith('loss,')).map((l) => l.split(','));
    assert.deepEqual(
      loss.map((f) => [Number(f[1]), Number(f[2])]),
      [10, 20, 30, 40].map((s) => [s, shortestFloat32(Math.fround(1 / s))]).concat([50, 60].map((s) => [s, shortestFloat32(Math.fround(1 / (s + 1)))])),
    );
    assert.equal(rows.filter((l) => l.startsWith('eval/acc,')).length, 5);
  });

  test('a log without steps: the header, stderr and JSON say x is the epoch', () => {
    const t = cli(['metrics', 'box/host/keras-run']);
    assert.equal(t.code, 0, t.stderr);
    assert.match(t.stdout, /^series\s+points\s+first epoch: value\s+last epoch: value$/m);
    assert.match(t.stdout, /^loss\s+3\s+0: 0\.9\s+2: 0\.25$/m);
    assert.match(t.stderr, /x is epoch, not a step/);
    assert.equal(JSON.parse(cli(['metrics', 'box/host/keras-run', '--json']).stdout).x, 'epoch');
    assert.equal(JSON.parse(cli(['metrics', 'box/host/expA/seed1', '--json']).stdout).x, 'step');
  });

  test('an ambiguous or unknown run, and a run without a metrics log, fail with their kinds', () => {
    const amb = cli(['metrics', 'box/host/seed1']);
    assert.equal(amb.code, 2);
    assert.match(amb.stderr, /ambiguous: .*expA\/seed1.*expB\/seed1/);
    const none = cli(['metrics', 'box/host/weights-only']);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /not-found: Run "weights-only" .* has no metrics log/);
    const both = cli(['metrics', 'box/host/live', '--json', '--csv']);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /bad-config: --json and --csv/);
  });

  test('--follow prints what is there, then each point appended while it runs, until SIGINT (exit 0)', { timeout: 120_000 }, async () => {
    const child = spawn(process.execPath, [CLI, 'metrics', 'box/host/live', '--follow', '--csv', '--config', config, '--known-hosts', host.knownHostsFile], {
      env: { PATH: process.env.PATH, HOME: host.clientHome },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const waitFor = async (re: RegExp): Promise<void> => {
      const deadline = Date.now() + 60_000;
      while (!re.test(out)) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${re} in ${JSON.stringify(out)} (stderr ${JSON.stringify(err)})`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    try {
      await waitFor(/^loss,1,0\.5,$/m);
      const log = path.join(root, 'live', 'metrics.jsonl');
      fs.appendFileSync(log, line(2, 0.25) + line(3, 0.125));
      await waitFor(/^loss,3,0\.125,$/m);
      fs.appendFileSync(log, '{"step": 4, "lo'); // half a line: held back until its end arrives
      await new Promise((r) => setTimeout(r, 3000));
      fs.appendFileSync(log, 'ss": 0.0625}\n');
      await waitFor(/^loss,4,0\.0625,$/m);
    } finally {
      child.kill('SIGINT');
    }
    assert.equal(await exited, 0, err);
    const rows = out.trim().split('\n');
    assert.deepEqual(rows, ['series,step,value,time', 'loss,1,0.5,', 'loss,2,0.25,', 'loss,3,0.125,', 'loss,4,0.0625,'], 'every point exactly once');
  });
});

/** Every process on the machine, as [pid, ppid, args]. */
function processes(): [string, string, string][] {
  const out = execFileSync('ps', ['-o', 'pid=,ppid=,args=', '-e'], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((l) => l.trim().match(/^(\d+)\s+(\d+)\s+(.*)$/))
    .filter((m): m is RegExpMatchArray => m !== null)
    .map((m) => [m[1], m[2], m[3]]);
}

/** `pid` and the processes below it. */
function descendants(pid: number): string[] {
  const rows = processes();
  const pids = new Set([String(pid)]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [p, pp] of rows) if (pids.has(pp) && !pids.has(p)) (pids.add(p), (grew = true));
  }
  return [...pids];
}

/** What the open descriptors of `pid` point at ([] once it is gone). */
function openFiles(pid: string): string[] {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).map((fd) => {
      try {
        return fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return '';
      }
    });
  } catch {
    return [];
  }
}

const alive = (pid: string): boolean => fs.existsSync(`/proc/${pid}`);

test('remote-runs metrics killed with SIGKILL mid-stream: none of its ssh outlives it, no spool is left, the next run reads every line', async () => {
  // 24 MB, past the 16 MiB a backlog needs to come as one OpenSSH stream (follow.ts STREAM_ABOVE), through a link of
  // 4 MB/s: the kill lands while the server is still sending.
  const LINES = 240_000;
  const run = path.join(root, 'big-run');
  fs.mkdirSync(path.join(run, 'logs'), { recursive: true });
  let text = '';
  for (let s = 1; s <= LINES; s++) text += `{"step":${s},"loss":${(1 / s).toFixed(9)},"lr":0.000300000,"grad_norm":${(1 + 1 / s).toFixed(9)},"pad":1234567.25}\n`;
  fs.writeFileSync(path.join(run, 'logs', 'train.jsonl'), text);
  execFileSync('chmod', ['-R', 'a+rwX', run]);
  const slow = await host.throughProxy({ rateBytesPerSec: 4_000_000 });
  const slowConfig = path.join(host.dir, 'metrics-cli-slow.json');
  fs.writeFileSync(slowConfig, JSON.stringify({ hosts: [slow.hostConfig('slowbox', { runRoots: [root], targets: ['host'] })] }));
  // The CLI's TMPDIR: where its OpenSSH session folder (and the stream's spool) is made.
  const tmp = fs.mkdtempSync(path.join(host.dir, 'cli-tmp-'));
  const env = { PATH: process.env.PATH, HOME: host.clientHome, TMPDIR: tmp };
  const args = ['metrics', 'slowbox/host/big-run', '--json', '--config', slowConfig, '--known-hosts', host.knownHostsFile];
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));

  // Wait until one of its processes writes the stream into a spool file (created in the session folder, unlinked at once).
  let family: string[] = [];
  const spooling = (): boolean => {
    family = descendants(child.pid!);
    return family.some((p) => openFiles(p).some((f) => f.startsWith(tmp) && /spool-.*\(deleted\)$/.test(f)));
  };
  for (const end = Date.now() + 90_000; !spooling(); ) {
    assert.ok(Date.now() < end, `no stream into a spool file within 90 s; stderr: ${err}`);
    assert.ok(alive(String(child.pid)), `the CLI ended before it streamed; stderr: ${err}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const sshOfIt = processes().filter(([p, , cmd]) => family.includes(p) && /(^|\/)ssh\s/.test(cmd));
  assert.ok(sshOfIt.length > 0, `its ssh processes: ${family.join(' ')}`);
  child.kill('SIGKILL');
  assert.equal(await exited, 'SIGKILL');

  // Nothing of it lives on: not its ssh (master, mux client, stream), not its lifeline, no descriptor on the spool.
  const lingering = (): string[] => family.filter((p) => p !== String(child.pid) && alive(p)).map((p) => processes().find(([q]) => q === p)?.join(' ') ?? p);
  for (const end = Date.now() + 30_000; lingering().length > 0; ) {
    assert.ok(Date.now() < end, `processes of the killed CLI still running after 30 s: ${lingering().join('; ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const onTmp = processes().filter(([p]) => openFiles(p).some((f) => f.startsWith(tmp)));
  assert.deepEqual(onTmp, [], 'no process holds a file of the killed session');
  // No spool file has a name (it never had one for longer than its creation took); the session folder may be left.
  const named = (fs.readdirSync(tmp, { recursive: true }) as string[]).filter((n) => /spool-/.test(n));
  assert.deepEqual(named, []);

  // The next run (straight to the host: the slow link has done its part) removes the dead session's folder and
  // reads the whole log.
  await slow.proxy.close();
  const left = fs.readdirSync(tmp).filter((n) => n.startsWith('rr-ssh-'));
  const again = spawnSync(process.execPath, [CLI, 'metrics', 'box/host/big-run', '--json', '--config', config, '--known-hosts', host.knownHostsFile], { env, encoding: 'utf8', input: '', timeout: 180_000 });
  assert.equal(again.status, 0, again.stderr);
  const summary = JSON.parse(again.stdout) as { series: { name: string; points: number; last: { step: number } }[] };
  const loss = summary.series.find((s) => s.name === 'loss');
  assert.deepEqual([loss?.points, loss?.last.step], [LINES, LINES], 'every line once');
  for (const name of left) assert.ok(!fs.existsSync(path.join(tmp, name)), `the dead session's folder ${name} was removed`);
  assert.deepEqual(fs.readdirSync(tmp).filter((n) => n.startsWith('rr-ssh-')), [], 'and the new run removed its own');
});
