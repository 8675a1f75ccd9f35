/**
 * A download in a real VS Code when its window reloads (the extension host goes away mid-transfer, as in a crash):
 * every `ssh` of that download ends, the partial file stays out of the checkpoint folder, and the next download
 * resumes from it to the remote's bytes: the new window announces the interrupted download (its share, Resume and
 * Discard), the tree marks the checkpoint `partial N%`, and Resume completes it on the first try. Through a 16 MiB/s
 * link of the test's own, so the reload lands mid-transfer.
 * The same against the demo host (ssh2's server side, src/demo, where issue 33 saw every resume fail once) and in the
 * last percent against the real sshd: the link is held at the point (proxy.holdAfter, test/harness/tcpProxy.ts), so
 * the reload strikes there and not wherever the transfer happened to be.
 * Cancel, clicked on the download's progress notification, keeps what arrived: the next Download resumes from it.
 * And one writer across processes: the CLI pulling what the window is downloading is refused with `busy`.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { expandTreeRow, expectRow, treeContextMenu, treeRow } from './treeRows';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { isRunning, recordedBytes } from '../harness/faults';
import { startTestHost, type ProxiedHost, type TestHost } from '../harness/testHost';
import { startTcpProxy, type TcpProxy } from '../harness/tcpProxy';
import { eventually } from '../harness/assertKind';
import { startDemoHost, type DemoHost } from '../../src/demo/demoHost';
import { testHostSettings } from './suite';
import { act, escapeRegExp } from './ui';
import type { Locator } from 'playwright-core';

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
let demo: DemoHost;
let demoLink: TcpProxy;
let scratch: string;
/**
 * The checkpoints the gated cases download, each in a run of its own. The one stopped in its last percent is a
 * single stream's (under 128 MiB: OPENSSH_MIN_PIECE in download.ts) and large enough that the stream runner's 1 MiB
 * writes (WRITE_COALESCE in stream.ts) still leave 99% of it written and recorded at the point.
 */
const gated = { demoRun: randomBytes(64 * MiB), tailRun: randomBytes(126 * MiB), cancelRun: randomBytes(64 * MiB) };
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
  for (const [run, step, bytes] of [['tail-run', 'step_5', gated.tailRun], ['cancel-run', 'step_7', gated.cancelRun]] as const) {
    mkdirSync(path.join(root, run, 'checkpoints', step), { recursive: true });
    writeFileSync(path.join(root, run, 'checkpoints', step, 'model.bin'), bytes);
  }
  execFileSync('chmod', ['-R', 'a+rX', root]);
  // The demo host through a 16 MiB/s link of the test's own, trusted at the link's port; its run under /root/runs.
  scratch = mkdtempSync(path.join(tmpdir(), 'rr-e2e-dl-demo-'));
  demo = await startDemoHost({ base: path.join(scratch, 'demo') });
  const demoStep = path.join(demo.paths.machine, 'root', 'runs', 'demo-run', 'checkpoints', 'step_3');
  mkdirSync(demoStep, { recursive: true });
  writeFileSync(path.join(demoStep, 'model.bin'), gated.demoRun);
  demoLink = await startTcpProxy(demo.port, { rateBytesPerSec: 16 * MiB });
  const demoKnown = path.join(scratch, 'demo-known_hosts');
  writeFileSync(demoKnown, `[127.0.0.1]:${demoLink.port} ${demo.keys.hostPublicLine}\n`);
  const demoConfig = { ...demo.hostConfig, name: 'demobox', port: demoLink.port, targets: ['host'], runRoots: ['/root/runs'] };
  cliConfig = path.join(host.dir, 'cli-config.json');
  writeFileSync(cliConfig, JSON.stringify({ hosts: [slow.hostConfig('slowbox', { targets: ['host'], runRoots: [root] })] }));
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-ws-'));
  downloads = mkdtempSync(path.join(tmpdir(), 'rr-e2e-dl-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      ...testHostSettings(host, [slow.hostConfig('slowbox', { targets: ['host'], runRoots: [root] }), demoConfig]),
      'remoteRuns.knownHostsFiles': [host.knownHostsFile, demoKnown],
      'remoteRuns.downloadDirectory': downloads,
    },
  });
});

after(async () => {
  await session?.close();
  await host?.stop();
  await demoLink?.close();
  await demo?.stop();
  for (const d of [workspace, downloads, scratch]) if (d) rmSync(d, { recursive: true, force: true });
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

/**
 * Click Resume on the announcement of `label`'s interrupted download: on its toast, or in the notification center
 * once the toast has hidden (an information toast hides after some seconds, and on a loaded machine the tree steps
 * before the click can outlast it). Done when the download shows (its progress, its end, or its error).
 */
async function resumeFromAnnouncement(label: string): Promise<void> {
  const { page } = session;
  const text = `the download of ${label} from`;
  const resume = (where: string): Locator => page.locator(`${where} .notification-list-item`, { hasText: text }).locator('.monaco-button', { hasText: /^Resume$/ });
  const started = new RegExp(`Downloading ${escapeRegExp(label)}|downloaded ${escapeRegExp(label)} |^Remote Runs: ${escapeRegExp(label)}: `);
  await act(page, {
    what: `Resume clicked on the announcement of ${label}`,
    action: async () => {
      if ((await session.notifications()).some((n) => started.test(n.message))) return;
      if (await resume('.notifications-toasts').isVisible()) return resume('.notifications-toasts').click();
      if (!(await resume('.notifications-center').isVisible())) await session.runCommand('Notifications: Show Notifications');
      await resume('.notifications-center').click({ timeout: 15_000 });
      await page.keyboard.press('Escape'); // the center closed again, so the toasts that follow show
    },
    effect: async () => (await session.notifications()).some((n) => started.test(n.message)),
  });
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
    const interrupted = /^Remote Runs: the download of reload-run\/step_1 from slowbox was interrupted with (\d+)% here \([\d.]+ MB of 101 MB\)\.$/;
    const announced = await session.waitForNotification(interrupted, 60_000);
    const pct = Number(interrupted.exec(announced.message)![1]);
    assert.ok(pct >= 16 && pct < 100, `the share announced is what was recorded (${pct}%)`);
    const toast = session.page.locator('.notifications-toasts .notification-toast', { hasText: 'was interrupted' });
    assert.deepEqual(await toast.locator('.monaco-button').allInnerTexts(), ['Resume', 'Discard']);
    await openCheckpoint();
    await expectRow(session, 'step_1', new RegExp(`partial ${pct}%`));
    await resumeFromAnnouncement('reload-run/step_1');
    // The resumed part is what was on disk at the reload, less at most what came after its last record.
    await session.waitForNotification(/downloaded reload-run\/step_1 \(101 MB, [\d.]+ MB resumed, verified by SHA-256 on both sides\)/, 180_000);
    assert.equal(createHash('sha256').update(readFileSync(local)).digest('hex'), createHash('sha256').update(data).digest('hex'));
    assert.deepEqual(readdirSync(path.dirname(local)), ['model.bin'], 'the checkpoint folder holds what the remote has');
  });
});

/** A download the link stops at a point: which checkpoint, on which host, through which link, where. */
interface Gated {
  host: 'slowbox' | 'demobox';
  /** Which `host` row is the host's own: slowbox's is listed first (0), demobox's second (1). */
  which: 0 | 1;
  run: string;
  step: string;
  data: Buffer;
  /** Its size as VS Code shows it. */
  shown: string;
  link: () => TcpProxy;
  /** Share of the checkpoint let down the link before it is held, and the share the record must then stand in. */
  fraction: number;
  min: number;
  max: number;
}

function gatedPaths(g: Gated): { part: string; record: string; local: string } {
  const part = path.join(downloads, g.host, '.remote-runs', 'partial', g.run, g.step, 'model.bin.part');
  return { part, record: `${part}.json`, local: path.join(downloads, g.host, g.run, g.step, 'model.bin') };
}

async function openGated(g: Gated): Promise<void> {
  await session.openViewContainer('Remote Runs');
  // slowbox's `host` row first, so that demobox's is always the second (until it is listed, the second is none).
  await expandTreeRow(session, 'slowbox');
  await expandTreeRow(session, 'host', 0);
  if (g.which === 1) {
    await expandTreeRow(session, 'demobox');
    await treeRow(session, 'host', 1).waitFor({ state: 'visible', timeout: 60_000 });
    await expandTreeRow(session, 'host', 1);
  }
  await expandTreeRow(session, g.run);
}

/**
 * Download Checkpoint with the link held once `fraction` of the checkpoint has come down it (to the 64 KiB chunk,
 * however late the test looks), then wait until the download's record stands still (it is saved every second):
 * the download is stopped at the point. Returns the bytes recorded.
 */
async function downloadHeld(g: Gated): Promise<number> {
  await openGated(g);
  const { record } = gatedPaths(g);
  const link = g.link();
  const start = link.bytesDown;
  link.holdAfter(g.fraction * g.data.length);
  await treeContextMenu(session, g.step, /^Download Checkpoint…$/);
  await eventually(() => link.bytesDown - start >= g.fraction * g.data.length, `${g.fraction * 100}% of ${g.run}/${g.step} came down the link`, 120_000);
  let last = -1;
  let since = Date.now();
  await eventually(() => {
    const now = recordedBytes(record);
    if (now !== last) [last, since] = [now, Date.now()];
    return now > 0 && Date.now() - since >= 3000;
  }, 'the record stands still', 60_000);
  const at = recordedBytes(record);
  assert.ok(at >= g.min * g.data.length && at < g.max * g.data.length, `stopped with ${at} of ${g.data.length} bytes recorded (${((100 * at) / g.data.length).toFixed(2)}%)`);
  return at;
}

/** After the window reloaded: it announces the download with the share recorded, and Resume completes it. */
async function announcedAndResumed(g: Gated, at: number): Promise<void> {
  const label = `${g.run}/${g.step}`;
  const announced = await session.waitForNotification(new RegExp(`^Remote Runs: the download of ${label} from ${g.host} was interrupted with (\\d+)% here \\([\\d.]+ MB of ${g.shown}\\)\\.$`), 60_000);
  assert.equal(/with (\d+)% here/.exec(announced.message)![1], String(Math.floor((100 * at) / g.data.length)), 'the share announced is what was recorded');
  const toast = session.page.locator('.notifications-toasts .notification-toast', { hasText: `download of ${label}` });
  assert.deepEqual(await toast.locator('.monaco-button').allInnerTexts(), ['Resume', 'Discard']);
  await openGated(g);
  await expectRow(session, g.step, new RegExp(`partial ${Math.floor((100 * at) / g.data.length)}%`));
  await resumeFromAnnouncement(label);
  // First try: the one Resume ends in success, having continued from what was here; no error on the way.
  const done = await session.waitForNotification(new RegExp(`downloaded ${label} \\(|^Remote Runs: (Error: |${label}: )`), 180_000);
  assert.match(done.message, new RegExp(`^Remote Runs: downloaded ${label} \\(${g.shown}, [\\d.]+ MB resumed, verified by SHA-256 on both sides\\)`));
  const { local } = gatedPaths(g);
  assert.equal(createHash('sha256').update(readFileSync(local)).digest('hex'), createHash('sha256').update(g.data).digest('hex'), 'the local file is the remote one');
  assert.deepEqual(readdirSync(path.dirname(local)), ['model.bin']);
}

const RELOADS: (Gated & { label: string })[] = [
  { host: 'demobox', which: 1, run: 'demo-run', step: 'step_3', data: gated.demoRun, shown: '67 MB', link: () => demoLink, fraction: 0.4, min: 0.3, max: 0.41, label: 'the demo host, at 40%' },
  { host: 'slowbox', which: 0, run: 'tail-run', step: 'step_5', data: gated.tailRun, shown: '132 MB', link: () => slow.proxy, fraction: 0.9995, min: 0.99, max: 1, label: 'a real sshd, in the last percent' },
];

for (const g of RELOADS) {
  test(`the window reloads while a download from ${g.label} stands still: the new window announces it and Resume completes it on the first try to the remote's bytes`, async () => {
    await withArtifactsOnFailure(session, `download-reload-${g.run}`, async () => {
      const before = ourSsh();
      let at: number;
      let running: number[];
      const link = g.link();
      try {
        at = await downloadHeld(g);
        running = ourSsh().filter((p) => !before.includes(p));
        assert.ok(running.length >= 1, 'the download runs through OpenSSH');
        await session.reloadWindow();
        await eventually(() => !running.some((p) => ourSsh().includes(p)), 'no ssh of the reloaded window is left', 60_000);
      } finally {
        link.release();
      }
      assert.ok(!existsSync(gatedPaths(g).local), 'no complete-looking file after the reload');
      await announcedAndResumed(g, at);
    });
  });
}

test('Cancel on the progress notification keeps what arrived: the next Download resumes from it and completes to the remote\'s bytes', async () => {
  await withArtifactsOnFailure(session, 'download-cancel', async () => {
    const g: Gated = { host: 'slowbox', which: 0, run: 'cancel-run', step: 'step_7', data: gated.cancelRun, shown: '67 MB', link: () => slow.proxy, fraction: 0.5, min: 0.4, max: 0.51 };
    const label = `${g.run}/${g.step}`;
    try {
      await downloadHeld(g);
      const progress = session.page.locator('.notifications-toasts .notification-toast', { hasText: `Downloading ${label}` });
      const cancel = progress.locator('.monaco-button', { hasText: /^Cancel$/ });
      await act(session.page, {
        what: 'Cancel clicked on the download\'s progress notification',
        action: async () => {
          if (await cancel.isVisible()) await cancel.click();
        },
        effect: async () => (await session.notifications()).some((n) => n.message.includes(`download of ${label} cancelled`)),
      });
    } finally {
      g.link().release();
    }
    assert.ok(recordedBytes(gatedPaths(g).record) >= g.min * g.data.length && !existsSync(gatedPaths(g).local), 'what arrived is kept, as a partial download');
    await treeContextMenu(session, g.step, /^Download Checkpoint…$/);
    const done = await session.waitForNotification(new RegExp(`downloaded ${label} \\(|^Remote Runs: (Error: |${label}: )`), 180_000);
    const resumed = /\(67 MB, ([\d.]+) MB resumed, verified by SHA-256 on both sides\)/.exec(done.message);
    assert.ok(resumed && Number(resumed[1]) > 0, `the second Download resumed: ${done.message}`);
    assert.equal(createHash('sha256').update(readFileSync(gatedPaths(g).local)).digest('hex'), createHash('sha256').update(g.data).digest('hex'), 'the local file is the remote one');
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
