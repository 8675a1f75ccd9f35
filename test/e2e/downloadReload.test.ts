/**
 * A download in a real VS Code when its window reloads (the extension host goes away mid-transfer, as in a crash):
 * every `ssh` of that download ends, the partial file stays out of the checkpoint folder, and the next download
 * resumes from it to the remote's bytes: the new window announces the interrupted download (its share, Resume and
 * Discard), the tree marks the checkpoint `partial N%`, and Resume completes it on the first try. Through a 16 MiB/s
 * link of the test's own, so the reload lands mid-transfer.
 * And one writer across processes: the CLI pulling what the window is downloading is refused with `busy`.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { expandTreeRow, expectRow, treeContextMenu } from './treeRows';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { isRunning, recordedBytes } from '../harness/faults';
import { startTestHost, type ProxiedHost, type TestHost } from '../harness/testHost';
import { testHostSettings } from './suite';

const MiB = 1024 * 1024;
const BYTES = 96 * MiB;
let host: TestHost;
let slow: ProxiedHost;
let session: VSCodeSession;
let workspace: string;
let downloads: string;
let data: Buffer;
let data2: Buffer;
let root: string;
let cliConfig: string;
const CLI = path.join(__dirname, '..', '..', 'dist', 'cli.js');

before(async () => {
  host = await startTestHost();
  slow = await host.throughProxy({ rateBytesPerSec: 16 * MiB });
  root = path.join(host.dir, 'slowruns');
  data = randomBytes(BYTES);
  mkdirSync(path.join(root, 'reload-run', 'checkpoints', 'step_1'), { recursive: true });
  writeFileSync(path.join(root, 'reload-run', 'checkpoints', 'step_1', 'model.bin'), data);
  data2 = randomBytes(64 * MiB);
  mkdirSync(path.join(root, 'shared-run', 'checkpoints', 'step_2'), { recursive: true });
  writeFileSync(path.join(root, 'shared-run', 'checkpoints', 'step_2', 'model.bin'), data2);
  execFileSync('chmod', ['-R', 'a+rX', root]);
  cliConfig = path.join(host.dir, 'cli-config.json');
  writeFileSync(cliConfig, JSON.stringify({ hosts: [slow.hostConfig('slowbox', { targets: ['host'], runRoots: [root] })] }));
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-ws-'));
  downloads = mkdtempSync(path.join(tmpdir(), 'rr-e2e-dl-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      ...testHostSettings(host, [slow.hostConfig('slowbox', { targets: ['host'], runRoots: [root] })]),
      'remoteRuns.downloadDirectory': downloads,
    },
  });
});

after(async () => {
  await session?.close();
  await host?.stop();
  for (const d of [workspace, downloads]) if (d) rmSync(d, { recursive: true, force: true });
});

/** Our `ssh` processes (a download's master and streams name their hosts rr-hopN), from /proc; zombies excluded. */
function ourSsh(): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (!isRunning(Number(name))) continue;
      if (path.basename(argv[0]) === 'ssh' && argv.some((a) => /^rr-hop\d+$/.test(a))) out.push(Number(name));
    } catch {
      // gone while we looked
    }
  }
  return out;
}

async function openCheckpoint(): Promise<void> {
  await session.openViewContainer('Remote Runs');
  await expandTreeRow(session, 'slowbox');
  await expandTreeRow(session, 'host');
  await expandTreeRow(session, 'reload-run');
}

test('the window reloads while a download runs: no ssh is left behind, the new window announces it (Resume / Discard, tree row partial N%), and Resume completes it to the same bytes', async () => {
  await withArtifactsOnFailure(session, 'download-reload', async () => {
    await openCheckpoint();
    const before = ourSsh();
    await treeContextMenu(session, 'step_1', /^Download Checkpoint…$/);
    const part = path.join(downloads, 'slowbox', '.remote-runs', 'partial', 'reload-run', 'step_1', 'model.bin.part');
    const size = (): number => (existsSync(part) ? statSync(part).blocks * 512 : 0);
    // Reloaded once the record holds at least 16 MiB (it advances every second and 32 MiB), so there is something
    // to resume, while most of the file is still on the way.
    const recorded = (): number => recordedBytes(`${part}.json`);
    const deadline = Date.now() + 120_000;
    while (recorded() < 16 * MiB && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.ok(recorded() >= 16 * MiB && size() < BYTES, `the download is in flight (${recorded()} bytes recorded, ${size()} written)`);
    const running = ourSsh().filter((p) => !before.includes(p));
    assert.ok(running.length >= 2, `the download runs through OpenSSH (its master and a stream): ${running.join(' ')}`);

    await session.reloadWindow();
    const gone = Date.now() + 60_000;
    while (running.some((p) => ourSsh().includes(p)) && Date.now() < gone) await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(running.filter((p) => ourSsh().includes(p)), [], 'no ssh of the reloaded window is left');
    const local = path.join(downloads, 'slowbox', 'reload-run', 'step_1', 'model.bin');
    assert.ok(recorded() >= 16 * MiB && !existsSync(local), 'the partial file and its record are kept; no complete-looking file');

    // The new window says the download was interrupted and offers to resume it; the tree marks the checkpoint.
    await openCheckpoint();
    const interrupted = /^Remote Runs: the download of reload-run\/step_1 from slowbox was interrupted with (\d+)% here \([\d.]+ MB of 101 MB\)\.$/;
    const announced = await session.waitForNotification(interrupted, 60_000);
    const pct = Number(interrupted.exec(announced.message)![1]);
    assert.ok(pct >= 16 && pct < 100, `the share announced is what was recorded (${pct}%)`);
    const toast = session.page.locator('.notifications-toasts .notification-toast', { hasText: 'was interrupted' });
    assert.deepEqual(await toast.locator('.monaco-button').allInnerTexts(), ['Resume', 'Discard']);
    await expectRow(session, 'step_1', new RegExp(`partial ${pct}%`));
    await toast.locator('.monaco-button', { hasText: /^Resume$/ }).click();
    // The resumed part is what was on disk at the reload, less at most what came after its last record.
    await session.waitForNotification(/downloaded reload-run\/step_1 \(101 MB, [\d.]+ MB resumed, verified by SHA-256 on both sides\)/, 180_000);
    assert.equal(createHash('sha256').update(readFileSync(local)).digest('hex'), createHash('sha256').update(data).digest('hex'));
    assert.deepEqual(readdirSync(path.dirname(local)), ['model.bin'], 'the checkpoint folder holds what the remote has');
  });
});

/** The built CLI pulling the newest checkpoint of shared-run into the folder the window downloads to. */
function cliPull(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [CLI, 'pull', 'slowbox/host/shared-run/latest', '--to', path.join(downloads, 'slowbox'), '--config', cliConfig, '--known-hosts', host.knownHostsFile],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('a CLI pull of the checkpoint a window is downloading fails at once with busy naming the window, never writes; afterwards it finds the file identical', async () => {
  await withArtifactsOnFailure(session, 'download-busy', async () => {
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, 'slowbox');
    await expandTreeRow(session, 'host');
    await expandTreeRow(session, 'shared-run');
    await treeContextMenu(session, 'step_2', /^Download Checkpoint…$/);
    const part = path.join(downloads, 'slowbox', '.remote-runs', 'partial', 'shared-run', 'step_2', 'model.bin.part');
    const deadline = Date.now() + 120_000;
    while (recordedBytes(`${part}.json`) < 8 * MiB && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const local = path.join(downloads, 'slowbox', 'shared-run', 'step_2', 'model.bin');
    assert.ok(recordedBytes(`${part}.json`) >= 8 * MiB && !existsSync(local), 'the window is downloading');

    const busy = await cliPull();
    assert.notEqual(busy.code, 0, `the CLI stops: ${busy.stderr}`);
    assert.match(busy.stderr, /busy/);
    assert.match(busy.stderr, /a VS Code window \(pid \d+/);

    await session.waitForNotification(/downloaded shared-run\/step_2 \(67 MB, verified by SHA-256 on both sides\)/, 180_000);
    const want = createHash('sha256').update(data2).digest('hex');
    assert.equal(createHash('sha256').update(readFileSync(local)).digest('hex'), want, "the window's download is the remote file: the CLI wrote nothing");
    const again = await cliPull();
    assert.equal(again.code, 0, again.stderr);
    assert.equal(createHash('sha256').update(readFileSync(local)).digest('hex'), want);
    assert.deepEqual(readdirSync(path.dirname(local)), ['model.bin']);
  });
});
