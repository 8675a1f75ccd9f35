/**
 * The built CLI's output read by a program that stops reading (`remote-runs metrics … --csv | head -4`), against the
 * real test sshd: it ends quietly as `cat` would (141, or 0 when it had nothing more to write), no stack trace, and
 * none of its processes (ssh master, streams) outlives it. Every output command, also with the reader gone before
 * the first byte.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { startTestHost, type TestHost } from '../harness/testHost';
import { CLI, ensureBuiltCli } from '../harness/builtCli';

let host: TestHost;
let config: string;
let root: string;
let tmp: string;

/** What a failed run prints that a quiet one never does: a stack frame, an unhandled error, the errno. */
const NOISE = /^\s+at |Error|EPIPE|Unhandled/m;
/** 24 MB of log, past the 16 MiB a backlog needs to come as one OpenSSH stream (follow.ts STREAM_ABOVE). */
const BIG_LINES = 240_000;

before(async () => {
  ensureBuiltCli();
  host = await startTestHost();
  root = path.join(host.dir, 'pipe-runs');
  const big = path.join(root, 'big-run', 'logs');
  fs.mkdirSync(big, { recursive: true });
  let text = '';
  for (let s = 1; s <= BIG_LINES; s++) text += `{"step":${s},"loss":${(1 / s).toFixed(9)},"lr":0.000300000,"grad_norm":${(1 + 1 / s).toFixed(9)},"pad":1234567.25}\n`;
  fs.writeFileSync(path.join(big, 'train.jsonl'), text);
  const live = path.join(root, 'live');
  fs.mkdirSync(live, { recursive: true });
  fs.writeFileSync(path.join(live, 'metrics.jsonl'), '{"step": 1, "loss": 0.5}\n{"step": 2, "loss": 0.25}\n');
  execFileSync('chmod', ['-R', 'a+rwX', root]);
  config = path.join(host.dir, 'pipe-cli.json');
  fs.writeFileSync(config, JSON.stringify({ hosts: [host.hostConfig('box', { runRoots: [root], targets: ['host'] }), host.hostConfig('story')] }));
  // The CLI's TMPDIR: its OpenSSH session folder is made there, so every ssh it starts names it.
  tmp = fs.mkdtempSync(path.join(host.dir, 'cli-tmp-'));
});
after(async () => {
  await host?.stop();
});

/** Every process on the machine, as [pid, ppid, args]. */
function processes(): [string, string, string][] {
  return execFileSync('ps', ['-o', 'pid=,ppid=,args=', '-e'], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.trim().match(/^(\d+)\s+(\d+)\s+(.*)$/))
    .filter((m): m is RegExpMatchArray => m !== null)
    .map((m) => [m[1], m[2], m[3]]);
}

/** The processes below `pid` (not itself), as "pid args". */
function descendants(pid: number): Map<string, string> {
  const rows = processes();
  const pids = new Set([String(pid)]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [p, pp] of rows) if (pids.has(pp) && !pids.has(p)) (pids.add(p), (grew = true));
  }
  pids.delete(String(pid));
  return new Map(rows.filter(([p]) => pids.has(p)).map(([p, , cmd]) => [p, cmd]));
}

const alive = (pid: string): boolean => fs.existsSync(`/proc/${pid}`);

interface Piped {
  /** The CLI's exit status (a signal's name if one ended it). */
  status: number | string;
  stderr: string;
  /** What the reader printed. */
  read: string;
  /** Every process seen below the one started (the CLI, or the shell running the pipeline) while it ran, as "pid args". */
  family: Map<string, string>;
}

/**
 * The built CLI piped into `reader` by a shell, as a user types it (`remote-runs … | head -n 4`; the CLI's status is
 * the pipeline's first, on descriptor 3), or, with no `reader`, into a pipe whose reading end is closed at once (the
 * reader gone before the first byte). `whileRunning` acts while it runs (appends to a log).
 */
async function piped(args: string[], reader: string | undefined, whileRunning?: (read: () => string) => Promise<void>, watchEveryMs = 200): Promise<Piped> {
  const cliArgs = [CLI, ...args, '--config', config, '--known-hosts', host.knownHostsFile];
  const env = { PATH: process.env.PATH, HOME: host.clientHome, TMPDIR: tmp };
  const child = reader
    ? spawn('bash', ['-c', `"$@" 3>&- | ${reader} 3>&-; echo "\${PIPESTATUS[0]}" >&3`, 'bash', process.execPath, ...cliArgs], { env, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] })
    : spawn(process.execPath, cliArgs, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let read = '';
  let statusLine = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  if (reader) {
    child.stdout!.setEncoding('utf8').on('data', (s: string) => (read += s));
    (child.stdio[3] as NodeJS.ReadableStream).setEncoding('utf8').on('data', (s: string) => (statusLine += s));
  } else {
    child.stdout!.destroy(); // the only reading end: closed before the CLI writes
  }
  const exited = new Promise<number | string>((resolve) => child.once('close', (code, signal) => resolve(code ?? signal ?? 'none')));
  const family = new Map<string, string>();
  let done = false;
  void exited.then(() => (done = true));
  const watch = (async () => {
    while (!done) {
      for (const [p, cmd] of descendants(child.pid!)) family.set(p, cmd);
      await new Promise((res) => setTimeout(res, watchEveryMs));
    }
  })();
  try {
    await whileRunning?.(() => read);
  } catch (e) {
    for (const p of [...descendants(child.pid!).keys(), String(child.pid)]) {
      try {
        process.kill(Number(p), 'SIGKILL');
      } catch {
        // ended meanwhile
      }
    }
    throw e;
  }
  const code = await exited;
  await watch;
  return { status: reader ? (/^\d+$/.test(statusLine.trim()) ? Number(statusLine.trim()) : `the pipeline said ${JSON.stringify(statusLine)}`) : code, stderr, read, family };
}

/** Waits (generously) until no process of `family` is running; fails naming those that are. */
async function noneLeft(family: Map<string, string>): Promise<void> {
  const lingering = (): string[] => [...family].filter(([p]) => alive(p)).map(([p, cmd]) => `${p} ${cmd}`);
  for (const end = Date.now() + 30_000; lingering().length > 0; ) {
    assert.ok(Date.now() < end, `processes of the CLI still running after it ended: ${lingering().join('; ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(processes().filter(([, , cmd]) => cmd.includes(tmp)), [], 'no process names its session folder');
}

describe('remote-runs output read by a program that stops reading', () => {
  test('metrics --csv | head -n 4, over the OpenSSH stream: four lines, a quiet end with 141, none of its ssh left', { timeout: 300_000 }, async () => {
    // Its ssh live for the second the 24 MB take: looked for every 20 ms.
    const r = await piped(['metrics', 'box/host/big-run', '--csv'], 'head -n 4', undefined, 20);
    const lines = r.read.split('\n');
    assert.deepEqual([lines.length, lines[0], lines[4]], [5, 'series,step,value,time', ''], r.read);
    lines.slice(1, 4).forEach((l, i) => assert.match(l, new RegExp(`^loss,${i + 1},[\\d.]+,$`)));
    assert.equal(r.status, 141, r.stderr);
    assert.doesNotMatch(r.stderr, NOISE);
    assert.ok([...r.family.values()].some((cmd) => /(^|\/)ssh\s/.test(cmd)), `the backlog came over OpenSSH: ${[...r.family.values()].join('; ')}`);
    await noneLeft(r.family);
  });

  test('metrics --csv --follow | head -n 4: following ends when the reader has gone and a new point is written', { timeout: 180_000 }, async () => {
    const log = path.join(root, 'live', 'metrics.jsonl');
    // head writing each line as it reads it (into a pipe it would keep them until its fourth): what it read so far
    // says where the CLI is.
    const r = await piped(['metrics', 'box/host/live', '--csv', '--follow'], 'stdbuf -oL head -n 4', async (read) => {
      const waitFor = async (re: RegExp): Promise<void> => {
        for (const end = Date.now() + 90_000; !re.test(read()); ) {
          assert.ok(Date.now() < end, `${re} not read within 90 s: ${JSON.stringify(read())}`);
          await new Promise((res) => setTimeout(res, 100));
        }
      };
      await waitFor(/^loss,2,0\.25,$/m);
      // The fourth line: head prints it and exits. The CLI learns it at its next write, the point after.
      fs.appendFileSync(log, '{"step": 3, "loss": 0.125}\n');
      await waitFor(/^loss,3,0\.125,$/m);
      fs.appendFileSync(log, '{"step": 4, "loss": 0.0625}\n');
    });
    assert.deepEqual(r.read.split('\n'), ['series,step,value,time', 'loss,1,0.5,', 'loss,2,0.25,', 'loss,3,0.125,', '']);
    assert.equal(r.status, 141, r.stderr);
    assert.doesNotMatch(r.stderr, NOISE);
    await noneLeft(r.family);
  });

  const oldest = (): string => `story/pct:200/workspace/step_${host.storySteps[0]}`;
  const commands: [string, () => string[]][] = [
    ['ls', () => ['ls', 'story/pct:200/workspace']],
    ['ls --json', () => ['ls', 'story', '--json']],
    ['metrics', () => ['metrics', 'box/host/live']],
    ['metrics --json', () => ['metrics', 'box/host/live', '--json']],
    ['inspect --json', () => ['inspect', oldest(), '--json']],
    ['diff --json', () => ['diff', oldest(), 'story/pct:200/workspace/latest', '--json']],
  ];
  for (const [name, args] of commands) {
    test(`${name} with its reader gone before the first byte: 141, nothing but its own lines on stderr`, { timeout: 120_000 }, async () => {
      const r = await piped(args(), undefined);
      assert.equal(r.status, 141, r.stderr);
      assert.doesNotMatch(r.stderr, NOISE);
      await noneLeft(r.family);
    });
  }
});
