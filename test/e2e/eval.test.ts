/**
 * Evaluating a checkpoint in a real VS Code against the real test sshd: Evaluate from the checkpoint's context menu,
 * the eval's output shows in its terminal, the tree shows its result on the checkpoint, and the result is a point on
 * the run's metrics chart (read back from the canvas) that a new eval's result joins when it finishes.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { expandTreeRow, treeContextMenu, treeRow } from './treeRows';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { closeSuite, testHostSettings } from './suite';
import { hasMetricsFrame, metricsFrame } from './metricsView';
import { act, hoverUntil, until as untilRead } from './ui';
import { startTestHost, type TestHost } from '../harness/testHost';
import { TEST_USER } from '../harness/sshd';

let host: TestHost;
let session: VSCodeSession;
let workspace: string;
let evalsDir: string;

before(async () => {
  host = await startTestHost();
  // The trainer (the test user) owns the run's .remote-runs folder, where its evals live.
  const own = path.join(host.paths.runs, 'story', '.remote-runs');
  mkdirSync(own, { recursive: true });
  execFileSync('chown', ['-R', `${TEST_USER}:${TEST_USER}`, own]);
  evalsDir = path.join(own, 'evals');
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-ws-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      ...testHostSettings(host, [host.hostConfig('evbox', { targets: ['host'], runRoots: [host.paths.runs] })]),
      'remoteRuns.evalProfiles': [
        {
          name: 'acceptance',
          where: 'target',
          // With a hold file beside the run it keeps running (quietly: the whole log stays on screen) until a go file appears.
          command:
            'echo eval of step ${step}; for i in 1 2 3; do echo "progress $i/3"; sleep 0.3; done; ' +
            'if [ -e .remote-runs/hold ]; then echo waiting; while [ ! -e .remote-runs/go ]; do sleep 0.3; done; fi; echo \'{"acceptance_length": 6.4}\'',
        },
      ],
      // The DOM renderer: the terminal's text is then in .xterm-rows, readable by the test.
      'terminal.integrated.gpuAcceleration': 'off',
    },
  });
});

after(async () => {
  // An eval a failed test left holding ends on its go file (it runs detached; nothing else would end it).
  if (evalsDir) writeFileSync(path.join(path.dirname(evalsDir), 'go'), '');
  await closeSuite(session, host, workspace);
});

const row = (label: string) => treeRow(session, label);
const expandRow = (label: string) => expandTreeRow(session, label);
const contextMenu = (label: string, entry: RegExp) => treeContextMenu(session, label, entry);


function terminalText(): Promise<string> {
  return session.page.locator('.terminal-wrapper.active .xterm-rows').innerText();
}

async function terminalTab(name: string): Promise<void> {
  await session.page.locator('.terminal-tabs-entry, .single-terminal-tab', { hasText: name }).first().waitFor({ timeout: 60_000 });
}

/** Polls `read` until it matches (a guard against hanging; no timing is asserted). */
const until = (read: () => Promise<string>, match: RegExp, what: string, limitMs = 60_000): Promise<string> => untilRead(session.page, read, match, what, limitMs);

test('Evaluate from the checkpoint context menu: output in its terminal, result on the checkpoint in the tree', async () => {
  await withArtifactsOnFailure(session, 'eval-tree', async () => {
    const step = host.storySteps[host.storySteps.length - 1];
    const ckpt = `step_${step}`;
    await session.openViewContainer('Remote Runs');
    await expandRow('evbox');
    await expandRow('host');
    await expandRow('story');
    await contextMenu(ckpt, /^Evaluate Checkpoint…$/);

    // The terminal is named after the checkpoint and profile, and shows the log from its first line to the end.
    await session.page.locator('.terminal-tabs-entry, .single-terminal-tab', { hasText: `eval ${ckpt} · acceptance` }).first().waitFor({ timeout: 60_000 });
    const text = await until(
      () => session.page.locator('.terminal-wrapper.active .xterm-rows').innerText(),
      /eval ✓ passed: acceptance_length=6\.4/,
      'terminal output',
    );
    assert.match(text, new RegExp(`eval of step ${step}\\s+progress 1/3\\s+progress 2/3\\s+progress 3/3\\s+\\{"acceptance_length": 6\\.4\\}`));

    // The tree shows the eval's result on that checkpoint.
    await until(() => row(ckpt).locator('.label-description').innerText(), /eval ✓ acceptance_length=6\.4/, 'checkpoint description');

    // The result was recorded in the eval folder beside the run (shared with every client).
    const ids = readdirSync(evalsDir);
    assert.equal(ids.length, 1);
    assert.equal(readFileSync(path.join(evalsDir, ids[0]!, 'results.jsonl'), 'utf8'), '{"acceptance_length":6.4}\n');
  });
});

/** The canvas pixel under each eval point's button (its centre), with the run's colour from the legend. */
async function evalPointPixels(frame: import('playwright-core').Frame, metric: string) {
  return frame.evaluate((key) => {
    const section = document.querySelector<HTMLElement>(`section.metric[data-metric="${key}"]`)!;
    const canvas = section.querySelector('canvas')!;
    const ctx = canvas.getContext('2d')!;
    const c = canvas.getBoundingClientRect();
    const scale = canvas.width / c.width;
    const swatch = getComputedStyle(document.querySelector<HTMLElement>(`.legend .eval-series[data-metric="${key}"] .eval-swatch`)!).backgroundColor;
    const points = Array.from(section.querySelectorAll<HTMLElement>('button.eval-point')).map((b) => {
      const r = b.getBoundingClientRect();
      const x = Math.round((r.left + r.width / 2 - c.left) * scale);
      const y = Math.round((r.top + r.height / 2 - c.top) * scale);
      return Array.from(ctx.getImageData(x, y, 1, 1).data);
    });
    return { swatch, points };
  }, metric);
}

function rgb(css: string): number[] {
  return (css.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map(Number);
}

test('the result is a point at the checkpoint\'s step on the metrics chart; hover shows profile, time and values; a new eval\'s result joins it', async () => {
  await withArtifactsOnFailure(session, 'eval-chart', async () => {
    const last = host.storySteps[host.storySteps.length - 1]!;
    await treeContextMenu(session, 'story', /^Open Metrics$/, { effect: () => hasMetricsFrame(session, 'panel') });
    const frame = await metricsFrame(session, 'panel', 60_000);
    // The eval metric is not in the training log: it gets a chart of its own, with one point.
    const section = frame.locator('section.metric[data-metric="acceptance_length"]');
    await section.waitFor({ timeout: 30_000 });
    const point = section.locator('button.eval-point');
    await point.first().waitFor({ timeout: 30_000 });
    assert.equal(await point.count(), 1);
    assert.equal(await point.getAttribute('aria-label'), `Eval acceptance of step_${last} (step ${last}): acceptance_length 6.4`);
    assert.match(await frame.locator('.legend .eval-series').innerText(), /eval acceptance_length \(acceptance\): 1 point/);

    // The point is painted in the run's colour where its button sits.
    const drawn = await evalPointPixels(frame, 'acceptance_length');
    assert.equal(drawn.points.length, 1);
    const [r, g, b, a] = drawn.points[0]!;
    assert.ok(a! > 200, `opaque at the point (alpha ${a})`);
    const want = rgb(drawn.swatch);
    assert.ok([r, g, b].every((v, i) => Math.abs(v! - want[i]!) <= 12), `point colour ${[r, g, b]} is the run's ${want}`);

    // Hover: profile, time and values.
    const tip = section.locator('.eval-tip');
    await hoverUntil(session.page, point, tip, 'the eval point\'s tooltip');
    const text = await tip.innerText();
    assert.match(text, new RegExp(`^eval acceptance · story · step_${last} \\(step ${last}\\)`));
    assert.match(text, /started \d{4}-\d\d-\d\d \d\d:\d\d · passed/);
    assert.match(text, /acceptance_length = 6\.4/);

    // Another checkpoint evaluated while the panel is open: its result appears when the eval finishes.
    const mid = host.storySteps[1]!;
    await contextMenu(`step_${mid}`, /^Evaluate Checkpoint…$/);
    await frame.waitForFunction(() => document.querySelectorAll('section.metric[data-metric="acceptance_length"] button.eval-point').length === 2, undefined, { timeout: 60_000 });
    const labels = await point.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')));
    assert.deepEqual(labels, [`Eval acceptance of step_${mid} (step ${mid}): acceptance_length 6.4`, `Eval acceptance of step_${last} (step ${last}): acceptance_length 6.4`]);
    assert.match(await frame.locator('.legend .eval-series').innerText(), /: 2 points/);
    assert.ok((await evalPointPixels(frame, 'acceptance_length')).points.every((p) => p[3]! > 200), 'both points painted');
  });
});

/** The eval table's document (its webview's inner frame) if one shows a table now. */
async function findEvalTable(): Promise<import('playwright-core').Frame | undefined> {
  for (const f of session.page.frames()) {
    if (await f.evaluate(() => document.querySelector('table[aria-label="Evals"]') !== null).catch(() => false)) return f;
  }
  return undefined;
}

/** The eval table's document, once it shows a table. */
async function evalTableFrame(timeoutMs = 60_000): Promise<import('playwright-core').Frame> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const f = await findEvalTable();
    if (f) return f;
    if (Date.now() > deadline) throw new Error('no eval table webview');
    await session.page.waitForTimeout(200);
  }
}

/** Clicks the table's copy button for `format` until the table says it copied that format. */
async function copyAs(frame: import('playwright-core').Frame, format: 'csv' | 'markdown'): Promise<void> {
  await act(session.page, {
    what: `the eval table copied as ${format}`,
    action: () => frame.locator(`button[data-format="${format}"]`).click(),
    effect: () => frame.evaluate((f) => document.body.dataset.copied === f, format),
    retryAfterMs: 10_000,
  });
}

test('Show Eval Results from the run\'s context menu: step × metric table, copied as CSV and as Markdown', async () => {
  await withArtifactsOnFailure(session, 'eval-table', async () => {
    const [mid, last] = [host.storySteps[1]!, host.storySteps[host.storySteps.length - 1]!];
    await session.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: session.url });
    await treeContextMenu(session, 'story', /^Show Eval Results$/, { effect: async () => (await findEvalTable()) !== undefined });
    const frame = await evalTableFrame();
    const header = await frame.locator('thead th').allInnerTexts();
    assert.deepEqual(header, ['step', 'checkpoint', 'profile', 'state', 'started', 'acceptance_length']);
    const rows = await frame.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td')).map((td) => td.textContent)));
    assert.deepEqual(rows.map((r) => [r[0], r[1], r[2], r[3], r[5]]), [
      [String(mid), `step_${mid}`, 'acceptance', 'passed', '6.4'],
      [String(last), `step_${last}`, 'acceptance', 'passed', '6.4'],
    ]);
    // Started in local time, as the chart's hover shows it (the copies keep the ISO instant).
    for (const r of rows) assert.match(r[4] ?? '', /^\d{4}-\d\d-\d\d \d\d:\d\d$/);

    await copyAs(frame, 'csv');
    const csv = await session.page.evaluate(() => navigator.clipboard.readText());
    const lines = csv.split('\r\n');
    assert.equal(lines[0], 'step,checkpoint,profile,state,started,acceptance_length');
    assert.match(lines[1]!, new RegExp(`^${mid},step_${mid},acceptance,passed,\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z,6\\.4$`));

    await copyAs(frame, 'markdown');
    const md = await session.page.evaluate(() => navigator.clipboard.readText());
    assert.match(md, /^\| step \| checkpoint \| profile \| state \| started \| acceptance_length \|\n\| ---: \| --- \| --- \| --- \| --- \| ---: \|\n/);
    assert.match(md, new RegExp(`\\| ${last} \\| step_${last} \\| acceptance \\| passed \\| [^|]+ \\| 6\\.4 \\|\\n$`));
  });
});

test('after a window reload a running eval re-attaches (log from the start); Stop Eval from the tree stops it', async () => {
  await withArtifactsOnFailure(session, 'eval-reattach-stop', async () => {
    const step = host.storySteps[0];
    const ckpt = `step_${step}`;
    writeFileSync(path.join(host.paths.runs, 'story', '.remote-runs', 'hold'), '');
    await contextMenu(ckpt, /^Evaluate Checkpoint…$/);
    await terminalTab(`eval ${ckpt} · acceptance`);
    await until(terminalText, /waiting/, 'the eval waiting before the reload');
    await until(() => row(ckpt).locator('.label-description').innerText(), /eval: running/, 'running state');

    await session.reloadWindow();
    await session.openViewContainer('Remote Runs');
    await expandRow('evbox');
    await expandRow('host');
    await expandRow('story');
    await terminalTab(`eval ${ckpt} · acceptance`);
    await session.page.locator('.terminal-tabs-entry, .single-terminal-tab', { hasText: `eval ${ckpt} · acceptance` }).first().click();
    // (With one terminal, clicking its title opens a menu of terminal actions; treeContextMenu closes it first.)
    const text = await until(terminalText, new RegExp(`eval of step ${step}\\s+progress 1/3[\\s\\S]*waiting`), 'the re-attached log from its first line');
    assert.ok(!/eval ✓/.test(text), 'still running');

    await contextMenu(ckpt, /^Stop Eval$/);
    await until(() => row(ckpt).locator('.label-description').innerText(), /eval ✗ stopped/, 'stopped state');
    await until(terminalText, /── eval ✗ failed/, 'the terminal says the eval ended');
    const left = execFileSync('ps', ['-eo', 'args='], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(`remote-runs-eval ${evalsDir}`));
    assert.deepEqual(left, [], 'nothing of the eval is left running');
  });
});
