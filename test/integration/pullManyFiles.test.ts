/**
 * A checkpoint of many small files pulled by the built CLI over the real test sshd: every file arrives, the CLI's peak
 * memory (VmHWM of /proc/PID/status, read while it runs) stays bounded, its progress moves and says truthfully what it
 * is doing (listing, files arriving, files put in place), and the download never loses its own lock (`busy` with no
 * other process). Killed with SIGKILL mid-pull, twice, the next pull takes over and ends byte-exact. 100,000 files, as
 * users have them (bench/manyFiles.ts pulls the same beside scp -r and ssh tar). A bound with room, not a timing. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { startTestHost, type TestHost } from '../harness/testHost';
import { CLI, ensureBuiltCli } from '../harness/builtCli';
import { peakKb } from '../harness/processes';

const FILES = 100_000;
const PER_FOLDER = 1000;
/**
 * The peak above that of the same CLI pulling a one-file checkpoint from the same host: 100,000 files measured
 * 160–180 MB above it on a 2-core machine (bench/manyFiles.ts). Most of that is the V8 heap grown up to four times the
 * live heap of its last full collection before it collects again; the live heap itself is ~23 MB above the idle CLI's,
 * ~230 bytes per file. Before files were put in place from their batch and held no state while waiting: 310–345 MB
 * above (and 2.15 GB with no file in place before the small-file batches).
 */
const ABOVE_IDLE_BOUND_MB = 240;

let host: TestHost;
let config: string;

before(async () => {
  ensureBuiltCli();
  host = await startTestHost();
  const root = path.join(host.dir, 'many');
  const ck = path.join(root, 'wide', 'checkpoints', 'step_1');
  for (let i = 0; i < FILES; i++) {
    const dir = path.join(ck, `part_${String(Math.floor(i / PER_FOLDER)).padStart(3, '0')}`);
    if (i % PER_FOLDER === 0) fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
    fs.writeFileSync(path.join(dir, `t_${String(i).padStart(6, '0')}.bin`), `${String(i).padStart(9, '0')}\n`, { mode: 0o644 });
  }
  fs.chmodSync(root, 0o755);
  // The idle CLI's checkpoint: one file, under a root of its own.
  const oneRoot = path.join(host.dir, 'one-root');
  fs.mkdirSync(path.join(oneRoot, 'one', 'checkpoints', 'step_1'), { recursive: true, mode: 0o755 });
  fs.writeFileSync(path.join(oneRoot, 'one', 'checkpoints', 'step_1', 'model.bin'), 'one file\n', { mode: 0o644 });
  fs.chmodSync(oneRoot, 0o755);
  config = path.join(host.dir, 'many-config.json');
  fs.writeFileSync(config, JSON.stringify({ hosts: [host.hostConfig('m', { runRoots: [root], targets: ['host'] }), host.hostConfig('o', { runRoots: [oneRoot], targets: ['host'] })] }));
});
after(async () => {
  await host?.stop();
});

/** A pull of the many-file checkpoint by the built CLI, in a process group of its own (so a kill takes all of it). */
function startPull(to: string): { child: ChildProcess; stderr: () => string; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const child = spawn(process.execPath, [CLI, 'pull', 'm/host/wide/step_1', '--to', to, '--config', config, '--known-hosts', host.knownHostsFile], {
    env: { PATH: process.env.PATH, HOME: host.clientHome },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  return { child, stderr: () => stderr, done };
}

/** Every file of the checkpoint in `local`, with its bytes; the count of those there. */
function filesHere(local: string): { count: number; wrong: string[] } {
  let count = 0;
  const wrong: string[] = [];
  for (let i = 0; i < FILES; i++) {
    const p = path.join(local, `part_${String(Math.floor(i / PER_FOLDER)).padStart(3, '0')}`, `t_${String(i).padStart(6, '0')}.bin`);
    let text: string;
    try {
      text = fs.readFileSync(p, 'utf8');
    } catch {
      continue;
    }
    count++;
    if (text !== `${String(i).padStart(9, '0')}\n`) wrong.push(p);
  }
  return { count, wrong };
}

/** Bytes a pull's summary says it fetched ("117 KB fetched"; formatBytes' decimal units). */
function fetchedBytes(stderr: string): number {
  const m = /([\d.]+) (B|KB|MB) fetched/.exec(stderr);
  assert.ok(m, `a summary with the bytes fetched: ${stderr.slice(-500)}`);
  return Number(m[1]) * { B: 1, KB: 1e3, MB: 1e6 }[m[2] as 'B' | 'KB' | 'MB'];
}

test(`${FILES} files, the pull killed (SIGKILL, its whole process group) while bytes arrive and again while files are put in place: the next pull takes over, keeps what was placed, and ends byte-exact`, async () => {
  const to = fs.mkdtempSync(path.join(host.dir, 'kill-'));
  const local = path.join(to, 'wide', 'step_1');
  const killWhen = async (pull: ReturnType<typeof startPull>, moment: RegExp): Promise<RegExpExecArray> => {
    // The moment is read from the pull's own progress lines (every 2 s without a terminal), never from a timer.
    for (;;) {
      const m = moment.exec(pull.stderr());
      if (m) {
        process.kill(-pull.child.pid!, 'SIGKILL');
        await pull.done;
        return m;
      }
      if (pull.child.exitCode !== null) assert.fail(`the pull ended before the moment ${moment}: ${pull.stderr().slice(-1000)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  // 1. While small files arrive in batches and are put in place (a batch in flight has no record: the next pull fetches
  // its files again).
  const first = startPull(to);
  await killWhen(first, /[1-9][\d,]* of [\d,]+ files in place/);
  // 2. Again, later: those renamed in are complete, with their records.
  const second = startPull(to);
  const at = await killWhen(second, /([1-9][\d,]*) of [\d,]+ files in place/);
  assert.doesNotMatch(second.stderr(), /busy/, 'the killed pull\'s lock was taken over');
  const placed = filesHere(local);
  assert.ok(placed.count >= Number(at[1].replace(/,/g, '')), `the files placed before the kill stay: ${placed.count}, progress said ${at[1]}`);
  assert.deepEqual(placed.wrong, [], 'a file in place is never partial');
  // 3. To the end.
  const third = await startPull(to).done;
  assert.equal(third.code, 0, third.stderr.slice(-2000));
  assert.doesNotMatch(third.stderr, /busy/);
  const all = filesHere(local);
  assert.equal(all.count, FILES);
  assert.deepEqual(all.wrong, []);
  assert.ok(fetchedBytes(third.stderr) <= (FILES - placed.count) * 10 + 1000, `only what was not in place is fetched again: ${fetchedBytes(third.stderr)} B for ${FILES - placed.count} files`);
  assert.match(third.stderr, /verified by SHA-256 on both sides/);
  // Nothing of the state beside the files: the checkpoint folder holds exactly the remote's folders.
  assert.equal(fs.readdirSync(local).length, Math.ceil(FILES / PER_FOLDER));
});

/** A pull by the built CLI to its end, with the peak RSS of its process (KB). */
async function pullMeasured(address: string, to: string): Promise<{ code: number; stdout: string; stderr: string; peak: number }> {
  const child = spawn(process.execPath, [CLI, 'pull', address, '--to', to, '--config', config, '--known-hosts', host.knownHostsFile], {
    env: { PATH: process.env.PATH, HOME: host.clientHome },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => {
    stderr += b.toString();
  });
  let peak = 0;
  const poll = setInterval(() => (peak = Math.max(peak, peakKb(child.pid!) ?? 0)), 100);
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
  clearInterval(poll);
  return { code, stdout, stderr, peak };
}

test(`${FILES} files: all arrive, with bounded memory, moving progress and the lock kept`, async () => {
  const idle = await pullMeasured('o/host/one/step_1', fs.mkdtempSync(path.join(host.dir, 'idle-')));
  assert.equal(idle.code, 0, idle.stderr.slice(-2000));
  const to = fs.mkdtempSync(path.join(host.dir, 'pull-'));
  const t0 = Date.now();
  const { code, stdout, stderr, peak } = await pullMeasured('m/host/wide/step_1', to);
  const seconds = (Date.now() - t0) / 1000;
  console.log(`# ${FILES} files: ${seconds.toFixed(1)} s, peak RSS ${(peak / 1024).toFixed(1)} MB; one file: ${(idle.peak / 1024).toFixed(1)} MB`);
  assert.equal(code, 0, stderr.slice(-2000));
  assert.doesNotMatch(stderr, /busy/);
  const local = path.join(to, 'wide', 'step_1');
  assert.equal(stdout.trim(), local);
  let count = 0;
  for (const d of fs.readdirSync(local)) count += fs.readdirSync(path.join(local, d)).length;
  assert.equal(count, FILES);
  const last = FILES - 1;
  assert.equal(fs.readFileSync(path.join(local, `part_${String(Math.floor(last / PER_FOLDER)).padStart(3, '0')}`, `t_${String(last).padStart(6, '0')}.bin`), 'utf8'), `${String(last).padStart(9, '0')}\n`);
  assert.ok(peak > 0 && idle.peak > 0 && (peak - idle.peak) / 1024 < ABOVE_IDLE_BOUND_MB, `peak RSS ${(peak / 1024).toFixed(1)} MB, ${((peak - idle.peak) / 1024).toFixed(1)} MB above a one-file pull's; bound ${ABOVE_IDLE_BOUND_MB} MB above`);
  // Progress lines (every 2 s without a terminal), in order: the listing, then files put in place as their batches
  // arrive, with a count that grows. Never "waiting for the remote SHA-256" (each batch brought its hashes).
  const lines = stderr.split('\n').filter((l) => l.startsWith('m/host/wide/step_1: ') && !/fetched|skipped/.test(l));
  assert.match(lines[0] ?? '', /listing the files of the checkpoint$/, 'the first line says the files are being listed');
  const placed = lines.map((l) => /([\d,]+) of ([\d,]+) files in place$/.exec(l)).filter((m) => m !== null);
  assert.ok(placed.length >= 2, `files put in place, counted: ${lines.slice(-5).join(' | ')}`);
  const counts = placed.map((m) => Number(m[1].replace(/,/g, '')));
  assert.ok(counts.every((n, i) => i === 0 || n >= counts[i - 1]) && counts[counts.length - 1] > counts[0], `the count of files in place grows: ${counts.join(', ')}`);
  assert.equal(placed[0][2].replace(/,/g, ''), String(FILES));
  assert.doesNotMatch(stderr, /waiting for the remote SHA-256/);
  assert.match(stderr, /verified by SHA-256 on both sides/);
});
