/**
 * What a metrics panel says about itself in a real VS Code (code-server + Chromium) over a real OpenSSH server
 * reached through a link of the test's own (test/harness/tcpProxy.ts), issue 17:
 * - a panel restored after a reload with non-default view settings (smoothing 0.95, a zoom) keeps them and goes
 *   quiet: a handful of messages, not snapshots forever (the webview owns its settings; snapshots never echo them);
 * - a run whose log is an hour old shows "stopped logging", while connected;
 * - the link going down (its port refusing) shows "unreachable … connection refused", not a frozen chart, once (issue
 *   33: the run's status repeated it), with the attempt number the tree shows; up again, it recovers to connected;
 * - the first download offers a folder outside the workspace and saves the choice in the user settings;
 * - the pinned run's status item reads out as plain words (issue 33: its aria-label held the tooltip's `&nbsp;`), as
 *   every other accessible name and tooltip in the sidebar and status bar;
 * - the host removed from settings: the panel says so once, stops polling, and the status bar drops the pinned run.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { Frame } from 'playwright-core';
import { startTestHost, type ProxiedHost, type TestHost } from '../harness/testHost';
import { startTcpProxy, type TcpProxy } from '../harness/tcpProxy';
import { hasMetricsFrame, metricsFrame } from './metricsView';
import { machineSettingsFileOf, machineSettingsOf, readSettingsFile } from './settingsFile';
import { expandTreeRow, treeContextMenu, treeRow } from './treeRows';
import { pickQuickItem, quickPickStep, until } from './ui';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { testHostSettings } from './suite';

let host: TestHost;
let link: ProxiedHost;
let session: VSCodeSession;
let workspace: string;
let logFile: string;
/** The link brought up again after it went down (closed at the end; the first one the test host closes). */
let restored: TcpProxy | undefined;

const RUN = 'state-run';
const HOST = 'linkbox';

before(async () => {
  host = await startTestHost();
  link = await host.throughProxy();
  const dir = path.join(host.containers.trainer.workspace, RUN);
  fs.mkdirSync(path.join(dir, 'logs'), { recursive: true });
  const rows = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ step: (i + 1) * 10, loss: Number((2 + Math.sin(i * 12.9898) * 0.3 + Math.exp(-i / 500)).toFixed(5)) }));
  logFile = path.join(dir, 'logs', 'train.jsonl');
  fs.writeFileSync(logFile, rows.join('\n') + '\n');
  // Written an hour ago: the run stopped logging (the panel must say so, and not confuse it with a lost host).
  const hourAgo = new Date(Date.now() - 3600_000);
  fs.utimesSync(logFile, hourAgo, hourAgo);
  fs.mkdirSync(path.join(dir, 'checkpoints', 'step_10000'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'checkpoints', 'step_10000', 'checkpoint.pt'), 'weights');
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-panelstate-ws-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      ...testHostSettings(host, [link.hostConfig(HOST)]),
      'remoteRuns.metrics.pollIntervalSeconds': 1,
    },
  });
});

after(async () => {
  await session?.close();
  await restored?.close();
  await host?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

let frame: Frame;
const chart = (metric: string) => frame.locator(`section.metric[data-metric="${metric}"]`);

async function xRange(metric: string): Promise<{ xMin: number; xMax: number }> {
  const d = await chart(metric).evaluate((e) => ({ ...(e as HTMLElement).dataset }));
  return { xMin: Number(d.xMin), xMax: Number(d.xMax) };
}

/** Count the messages the extension posts to the webview from now on (in the page; the CSP forbids eval). */
async function countMessages(): Promise<void> {
  await frame.evaluate(() => {
    const w = window as unknown as { __rrCount?: Record<string, number> };
    w.__rrCount = {};
    window.addEventListener('message', (e: MessageEvent) => {
      const t = e.data && typeof e.data === 'object' && typeof e.data.type === 'string' ? e.data.type : '?';
      w.__rrCount![t] = (w.__rrCount![t] ?? 0) + 1;
    });
  });
}

const counted = (): Promise<Record<string, number>> => frame.evaluate(() => ({ ...(window as unknown as { __rrCount: Record<string, number> }).__rrCount }));

const banner = () => frame.locator('.connection');
const activity = () => frame.locator('.activity');

test('a panel restored with smoothing 0.95 and a zoom keeps both and goes quiet (no snapshots echoing back and forth)', async () => {
  await withArtifactsOnFailure(session, 'panelstate-restore', async () => {
    await session.page.locator('.part.activitybar a.action-label[aria-label="Remote Runs"]').waitFor({ state: 'visible', timeout: 180_000 });
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, HOST);
    await expandTreeRow(session, 'docker:trainer');
    await treeRow(session, RUN).waitFor({ state: 'visible', timeout: 30_000 });
    await treeContextMenu(session, RUN, /^Open Metrics$/, { effect: () => hasMetricsFrame(session, 'panel') });
    frame = await metricsFrame(session, 'panel');
    await frame.locator('input[aria-label="Smoothing"]').evaluate((e) => {
      const input = e as HTMLInputElement;
      input.value = '0.95';
      input.dispatchEvent(new Event('input', { bubbles: true }));
      input.dispatchEvent(new Event('change', { bubbles: true }));
    });
    // Drag only once the chart has drawn its data (its x range is on the element), and again if a drag landed while
    // the layout was still settling on a loaded machine: the state after the zoom is what this test is about.
    await frame.waitForFunction(() => document.querySelector<HTMLElement>('section.metric[data-metric="loss"]')?.dataset.xMax !== undefined, undefined, { timeout: 60_000 });
    const zoomed = () => frame.waitForFunction(() => Number(document.querySelector<HTMLElement>('section.metric[data-metric="loss"]')?.dataset.xMin) > 1000, undefined, { timeout: 20_000 }).then(() => true, () => false);
    for (let attempt = 0; ; attempt++) {
      const box = await chart('loss').locator('canvas').boundingBox();
      assert.ok(box);
      const y = box.y + box.height / 2;
      await session.page.mouse.move(box.x + box.width * 0.4, y);
      await session.page.mouse.down();
      await session.page.mouse.move(box.x + box.width * 0.5, y, { steps: 4 });
      await session.page.mouse.move(box.x + box.width * 0.6, y, { steps: 4 });
      await session.page.mouse.up();
      if (await zoomed()) break;
      assert.ok(attempt < 2, 'three drags across the chart did not zoom it');
    }
    const zoom = await xRange('loss');
    assert.ok(zoom.xMax - zoom.xMin < 15_000, `zoomed: ${JSON.stringify(zoom)}`);
    assert.equal(await frame.locator('.smoothing-value').innerText(), '0.95');

    await session.reloadWindow();
    frame = await metricsFrame(session, 'panel', 120_000);
    await countMessages();
    // A few seconds with nothing new to show (the log does not grow; polls every second find nothing).
    await session.page.waitForTimeout(4000);
    const counts = await counted();
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    assert.ok(total <= 5, `at most a handful of messages in 4 s after the restore: ${JSON.stringify(counts)}`);
    assert.equal(await frame.locator('input[aria-label="Smoothing"]').inputValue(), '0.95');
    assert.equal(await frame.locator('.smoothing-value').innerText(), '0.95');
    assert.deepEqual(await xRange('loss'), zoom, 'the zoom survived the reload');
    assert.equal(await frame.locator('button', { hasText: 'Reset zoom' }).isDisabled(), false);
  });
});

test('connected, and the run that stopped writing its log an hour ago shows as stopped (not as a lost host)', async () => {
  await withArtifactsOnFailure(session, 'panelstate-stopped', async () => {
    await frame.waitForFunction(() => document.querySelector<HTMLElement>('.connection')?.dataset.state === 'connected', undefined, { timeout: 30_000 });
    await frame.waitForFunction(() => document.querySelector<HTMLElement>('.activity')?.dataset.activity === 'stopped', undefined, { timeout: 30_000 });
    // An hour and the minutes this suite has run so far (over a minute on a loaded machine: 62 min was seen).
    const said = await activity().innerText();
    const ageMin = (Date.now() - fs.statSync(logFile).mtimeMs) / 60_000;
    const shown = Number(/^stopped logging: last logged (\d+) min ago$/.exec(said)?.[1]);
    assert.ok(Math.abs(shown - ageMin) <= 1.5, `"${said}" for a log written ${ageMin.toFixed(1)} min ago`);
    // Appending makes it a logging run again, "last logged" a few seconds ago.
    fs.appendFileSync(logFile, `${JSON.stringify({ step: 20_010, loss: 1.9 })}\n`);
    await frame.waitForFunction(() => document.querySelector<HTMLElement>('.activity')?.dataset.activity === 'logging', undefined, { timeout: 30_000 });
    assert.match(await activity().innerText(), /^last logged \d+ s ago$/);
  });
});

test('the link goes down: the panel says unreachable with the reason; up again, it recovers', async () => {
  await withArtifactsOnFailure(session, 'panelstate-unreachable', async () => {
    // The tree beside the panel: its host row is compared with the panel below.
    await session.openViewContainer('Remote Runs');
    await treeRow(session, HOST).waitFor({ state: 'visible', timeout: 30_000 });
    const port = link.proxy.port;
    await link.proxy.close();
    let up: TcpProxy | undefined;
    try {
      await frame.waitForFunction(() => document.querySelector<HTMLElement>('.connection')?.dataset.state === 'unreachable', undefined, { timeout: 90_000 });
      const text = await banner().innerText();
      assert.match(text, /unreachable since \d\d:\d\d:\d\d/);
      assert.match(text, /refused/i);
      // What the run did is no longer known: not "stopped", not "logging".
      assert.match(await activity().innerText(), /last logged .* ago \(before the connection was lost\)/);
      // Said once: the banner, not again as the run's status under the legend.
      const said = await frame.evaluate(() => document.getElementById('app')!.innerText);
      assert.equal(said.match(/unreachable/gi)?.length, 1, `"unreachable" once in the panel:\n${said}`);
      assert.equal(said.match(/connection refused/gi)?.length, 1, `the reason once in the panel:\n${said}`);
      // The tree's host and the panel count the same attempts (the pool's): sampled side by side while the pool
      // tries again at each poll. A host that was connected is reconnecting, from its first attempt on.
      const treeHost = treeRow(session, HOST).locator('.label-description');
      const seen: string[] = [];
      let same = 0;
      for (const end = Date.now() + 30_000; Date.now() < end && same < 2; ) {
        const [tree, panel] = await Promise.all([treeHost.innerText().catch(() => ''), banner().innerText()]);
        seen.push(`${tree} | ${panel}`);
        assert.doesNotMatch(tree, /^connecting/, `the tree calls a reconnect a reconnect: ${seen.join('\n')}`);
        const t = /attempt (\d+)/.exec(tree)?.[1];
        const p = /attempt (\d+)/.exec(panel)?.[1];
        if (t !== undefined && t === p) same++;
        await session.page.waitForTimeout(200);
      }
      assert.equal(same, 2, `tree and panel showed the same attempt number:\n${seen.slice(-20).join('\n')}`);
      up = restored = await startTcpProxy(host.sshd.port, { port });
      await frame.waitForFunction(() => document.querySelector<HTMLElement>('.connection')?.dataset.state === 'connected', undefined, { timeout: 90_000 });
      assert.doesNotMatch(await banner().innerText(), /unreachable|reconnecting/);
    } finally {
      // The link comes back whatever happened above: the tests after this one need the host.
      up ??= restored = await startTcpProxy(host.sshd.port, { port });
    }
  });
});

test('the first download offers a folder outside the workspace and keeps the choice in the user settings', async () => {
  await withArtifactsOnFailure(session, 'panelstate-download-folder', async () => {
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, HOST);
    await expandTreeRow(session, 'docker:trainer');
    await expandTreeRow(session, RUN);
    await treeContextMenu(session, 'step_10000', /^Download Checkpoint…$/);
    const offered = path.join(session.home, 'remote-runs-downloads'); // the session's HOME has no Downloads folder
    const labels = await quickPickStep(session, /^Where should checkpoints be downloaded\?$/);
    assert.deepEqual(labels, [offered, 'Choose a folder…']);
    await pickQuickItem(session, offered);
    const file = path.join(offered, HOST, RUN, 'step_10000', 'checkpoint.pt');
    await until(session.page, async () => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : ''), /^weights$/, 'the checkpoint downloaded', 120_000);
    assert.equal(readSettingsFile(path.join(session.root, 'user-data', 'User', 'settings.json'))['remoteRuns.downloadDirectory'], offered);
    assert.equal(fs.existsSync(path.join(workspace, '.vscode', 'settings.json')), false, 'nothing written to the workspace settings');
  });
});

test('the host removed from settings: the panel says so once and stops polling; the status bar drops the pinned run', async () => {
  await withArtifactsOnFailure(session, 'panelstate-removed', async () => {
    // After the reload the tree shows the host collapsed again: list the run to pin it.
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, HOST);
    await expandTreeRow(session, 'docker:trainer');
    await treeRow(session, RUN).waitFor({ state: 'visible', timeout: 60_000 });
    await treeContextMenu(session, RUN, /^Pin Run$/);
    const pinned = session.page.locator('.part.statusbar .statusbar-item').filter({ hasText: new RegExp(`${RUN} · step`) }).first();
    await pinned.waitFor({ state: 'visible', timeout: 30_000 });
    // What a screen reader says: plain words, not the markdown tooltip's `&nbsp;` (VS Code's default label adds it).
    const spoken = await until(session.page, async () => (await pinned.getAttribute('aria-label')) ?? '', /step/, 'the pinned run read out with its step', 30_000);
    assert.match(spoken, new RegExp(`^Pinned run ${RUN} on ${HOST}/docker:trainer, step [\\d,]+, loss [\\d.]+\\. Click to open its metrics\\.$`));
    const labels = await session.page.locator('.part.statusbar [aria-label], .part.sidebar [aria-label], .part.sidebar [title]').evaluateAll((e) => e.map((x) => `${x.getAttribute('aria-label') ?? ''} ${x.getAttribute('title') ?? ''}`));
    assert.ok(labels.length > 5 && labels.every((l) => !/&(nbsp|amp|lt|gt|quot|#\d+);/.test(l)), `no HTML entities in accessible names and tooltips: ${labels.filter((l) => /&\w+;/.test(l))}`);
    // code-server's extension host is remote: its remote (Machine) settings override the User ones, as in a Remote-SSH
    // window, and VS Code applies an edit of that file at once.
    const file = machineSettingsFileOf(session.root);
    fs.writeFileSync(file, JSON.stringify({ ...machineSettingsOf(session.root), 'remoteRuns.hosts': [] }, null, 2));
    await session.treeItem(HOST).waitFor({ state: 'hidden', timeout: 60_000 }); // the setting reached the extension
    await pinned.waitFor({ state: 'hidden', timeout: 30_000 });
    const noHost = () => (session.vscodeLogs().match(/No host named/g) ?? []).length;
    await session.page.waitForTimeout(3000);
    const before = noHost();
    await session.page.waitForTimeout(5000);
    assert.equal(noHost(), before, 'no more "No host named" lines: nothing polls a host that is gone');
    assert.ok(before <= 1, `said at most once in the log (${before})`);
    await frame.waitForFunction(() => document.querySelector<HTMLElement>('.connection')?.dataset.state === 'removed', undefined, { timeout: 30_000 });
    assert.match(await banner().innerText(), new RegExp(`host ${HOST} was removed from settings`));
  });
});
