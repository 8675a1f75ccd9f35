/**
 * Issue 17's tree- and run-level features in a real VS Code against the real test sshd:
 * - a downloaded checkpoint is marked in the tree, its local path in the tooltip; the mark survives a window reload
 *   and drops when the local copy is deleted;
 * - a run's tooltip shows its config; Show Run Table on a target: a webview table with each run's state, latest step, last values and only the config
 *   key that differs;
 * - a multi-select of two checkpoints → Evaluate: one profile, one queue, both results on their checkpoints;
 * - a metrics panel shows its run's config collapsed under its header; its Add run… lists runs on every configured
 *   host (one never expanded in the tree), metrics runs only, and marks the unreachable one.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { Frame } from 'playwright-core';
import { expandTreeRow, expectRow, rowText, treeContextMenu, treeRow } from './treeRows';
import { act, hoverUntil, pickQuickItem, quickInputState, quickPickStep, until } from './ui';
import { metricsFrame } from './metricsView';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { startTestHost, type TestHost } from '../harness/testHost';
import { TEST_USER } from '../harness/sshd';
import { testHostSettings } from './suite';

let host: TestHost;
let session: VSCodeSession;
let workspace: string;
let downloads: string;
let roots: { main: string; far: string };

const metrics = (lr: number, steps: number[]): string => steps.map((s) => JSON.stringify({ step: s, loss: Number((2 - s / 1000).toFixed(3)), lr })).join('\n') + '\n';

function writeRun(root: string, name: string, lr: number, steps: number[], checkpoints: number[]): void {
  const dir = path.join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'metrics.jsonl'), metrics(lr, steps));
  writeFileSync(path.join(dir, 'config.yaml'), `model:\n  layers: 12\noptimizer:\n  lr: ${lr}\nseed: 1\n`);
  for (const c of checkpoints) {
    mkdirSync(path.join(dir, `step_${c}`), { recursive: true });
    writeFileSync(path.join(dir, `step_${c}`, 'model.pt'), Buffer.alloc(64 * 1024, c % 251));
  }
}

async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

before(async () => {
  host = await startTestHost();
  roots = { main: path.join(host.dir, 'e2e-runs'), far: path.join(host.dir, 'e2e-far') };
  writeRun(roots.main, 'alpha', 0.1, [100, 200, 300], [100, 200, 300]);
  writeRun(roots.main, 'beta', 0.01, [100, 200], [100]);
  writeRun(roots.far, 'gamma', 0.5, [10, 20], []);
  mkdirSync(path.join(roots.far, 'ckpts-only', 'step_5'), { recursive: true });
  writeFileSync(path.join(roots.far, 'ckpts-only', 'step_5', 'model.pt'), Buffer.alloc(16));
  // The trainer (the test user) owns the runs: their .remote-runs folders (evals) are its to write.
  execFileSync('chown', ['-R', `${TEST_USER}:${TEST_USER}`, roots.main, roots.far]);
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-ws-'));
  downloads = mkdtempSync(path.join(tmpdir(), 'rr-e2e-dl-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      ...testHostSettings(host, [
        host.hostConfig('rbox', { targets: ['host'], runRoots: [roots.main] }),
        host.hostConfig('farbox', { targets: ['host'], runRoots: [roots.far] }),
        { ...host.hostConfig('gonebox', { targets: ['host'], runRoots: [roots.far] }), port: await closedPort() },
      ]),
      'remoteRuns.downloadDirectory': downloads,
      'remoteRuns.evalProfiles': [{ name: 'quick', where: 'target', command: 'echo eval of ${step}; printf \'{"score": %s}\\n\' ${step}' }],
    },
  });
});

after(async () => {
  await session?.close();
  await host?.stop();
  for (const d of [workspace, downloads]) if (d) rmSync(d, { recursive: true, force: true });
});

const description = (label: string): Promise<string> => treeRow(session, label).locator('.label-description').innerText();

test('a downloaded checkpoint is marked in the tree with its local path in the tooltip; the mark survives a reload and drops when the copy is deleted', async () => {
  await withArtifactsOnFailure(session, 'runs-downloaded', async () => {
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, 'rbox');
    await expandTreeRow(session, 'host');
    await expandTreeRow(session, 'alpha');
    assert.doesNotMatch(await rowText(session, 'step_100'), /downloaded/);
    await treeContextMenu(session, 'step_100', /^Download Checkpoint…$/);
    await session.waitForNotification(/downloaded alpha\/step_100/, 90_000);
    const local = path.join(downloads, 'rbox', 'alpha', 'step_100');
    assert.ok(existsSync(path.join(local, 'model.pt')));
    await until(session.page, () => description('step_100'), /downloaded/, 'step_100 marked downloaded');
    assert.doesNotMatch(await description('step_200'), /downloaded/, 'only the checkpoint downloaded is marked');

    const tip = session.page.locator('.monaco-hover, .workbench-hover-container').filter({ hasText: `Downloaded: ${local}` });
    await hoverUntil(session.page, treeRow(session, 'step_100'), tip.first(), "step_100's tooltip with its local path");
    await session.page.mouse.move(1, 1);

    // Known from the download's own records on disk: a new window marks it too.
    await session.reloadWindow();
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, 'rbox');
    await expandTreeRow(session, 'host');
    await expandTreeRow(session, 'alpha');
    await until(session.page, () => description('step_100'), /downloaded/, 'step_100 still marked after a reload');

    // The local copy deleted: the mark drops (at the latest when the tree is refreshed).
    rmSync(local, { recursive: true, force: true });
    await session.runCommand('Remote Runs: Refresh');
    await until(session.page, () => description('step_100'), /^(?![\s\S]*downloaded)/, 'step_100 no longer marked');
  });
});

/** The run table page's document, once it shows a table. */
async function runTableFrame(): Promise<Frame> {
  let found: Frame | undefined;
  await act(session.page, {
    what: 'the run table page with its table',
    action: async () => undefined,
    effect: async () => {
      for (const f of session.page.frames()) {
        const ok = await f.evaluate(() => !!document.querySelector('table[aria-label="Runs"] tbody tr') && !document.querySelector('p.note')?.textContent?.startsWith('Reading')).catch(() => false);
        if (ok) {
          found = f;
          return true;
        }
      }
      return false;
    },
  });
  return found!;
}

test('a run\'s tooltip shows its config; Show Run Table on a target: state, latest step, last values and only the config key that differs', async () => {
  await withArtifactsOnFailure(session, 'runs-table', async () => {
    // The run's hover shows its config, read from the run folder.
    const tip = session.page.locator('.monaco-hover, .workbench-hover-container').filter({ hasText: 'Config: config.yaml (3 keys)' });
    await hoverUntil(session.page, treeRow(session, 'alpha'), tip.first(), "alpha's tooltip with its config");
    assert.match(await tip.first().innerText(), /optimizer\.lr:\s0\.1/); // (appendText keeps the spaces as no-break spaces)
    await session.page.mouse.move(1, 1);
    await treeContextMenu(session, 'host', /^Show Run Table$/);
    const frame = await runTableFrame();
    const cells = await frame.evaluate(() => Array.from(document.querySelectorAll('table[aria-label="Runs"] tr')).map((tr) => Array.from(tr.children).map((c) => c.textContent ?? '')));
    const head = cells[0]!;
    assert.deepEqual(head.slice(0, 3), ['run', 'state', 'latest step']);
    assert.ok(head.includes('loss') && head.includes('lr'), `metric columns: ${head.join(', ')}`);
    assert.ok(head.includes('optimizer.lr'), 'the config key whose values differ');
    assert.ok(!head.includes('model.layers') && !head.includes('seed'), 'keys both runs set alike are not columns');
    const row = (name: string) => cells.find((r) => r[0] === name)!;
    assert.equal(row('alpha')[head.indexOf('latest step')], '300');
    assert.equal(row('beta')[head.indexOf('latest step')], '200');
    assert.equal(row('alpha')[head.indexOf('optimizer.lr')], '0.1');
    assert.equal(row('beta')[head.indexOf('optimizer.lr')], '0.01');
    assert.equal(row('alpha')[head.indexOf('loss')], '1.7');
    assert.match(row('alpha')[1]!, /live|last logged/);
    const csp = await frame.evaluate(() => document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.getAttribute('content') ?? '');
    assert.match(csp, /default-src 'none'; script-src 'nonce-/);
    await session.page.keyboard.press('Control+W');
  });
});

test('a multi-select of two checkpoints → Evaluate: one profile, one queue, each result on its checkpoint', async () => {
  await withArtifactsOnFailure(session, 'runs-multi-eval', async () => {
    await session.openViewContainer('Remote Runs');
    await treeRow(session, 'step_200').click();
    await treeRow(session, 'step_300').click({ modifiers: ['Control'] });
    await until(session.page, async () => String(await session.page.locator('.part.sidebar .monaco-list-row[role=treeitem][aria-selected="true"]').count()), /^2$/, 'two rows selected');
    await treeContextMenu(session, 'step_300', /^Evaluate Checkpoint…$/);
    await session.waitForNotification(/2 of 2 evaluated with quick/, 120_000);
    await until(session.page, () => description('step_200'), /score=200/, 'step_200 shows its result');
    await until(session.page, () => description('step_300'), /score=300/, 'step_300 shows its result');
    assert.doesNotMatch(await description('step_100'), /score/, 'the checkpoint not selected was not evaluated');
  });
});

test("a metrics panel shows the run's config; its Add run… lists runs with metrics on every configured host and marks the unreachable one", async () => {
  await withArtifactsOnFailure(session, 'runs-add-run', async () => {
    await session.page.keyboard.press('Escape');
    await treeContextMenu(session, 'alpha', /^Open Metrics$/);
    const frame = await metricsFrame(session, 'panel');
    // The run's config, collapsed under the panel's header.
    const config = await until(session.page, () => frame.locator('details.run-config').innerText({ timeout: 5_000 }).catch(() => ''), /Config: config\.yaml \(3 keys\)/, "the panel's config block");
    assert.doesNotMatch(config, /optimizer\.lr/, 'collapsed: only its summary shows');
    await frame.locator('details.run-config summary').click();
    await until(session.page, () => frame.locator('details.run-config').innerText(), /optimizer\.lr: 0\.1/, 'the config block opened');
    await act(session.page, {
      what: 'the Add run… quick pick open',
      action: async () => {
        if (!(await quickInputState(session.page)).visible) await frame.locator('.toolbar button', { hasText: 'Add run…' }).click();
      },
      effect: async () => (await quickInputState(session.page)).visible,
    });
    // Rows arrive as each host answers (the unreachable one first): wait for all three, then for the rows to settle.
    const labels = (await quickPickStep(session, /^Add a run to compare$/, (l) => ['beta', 'gamma', 'gonebox'].every((x) => l.map((y) => y.trim()).includes(x)))).map((l) => l.trim());
    // farbox was never expanded in the tree; its run without metrics logs is not offered; alpha is already shown.
    assert.deepEqual([...labels].sort(), ['beta', 'gamma', 'gonebox']);
    const gone = await session.page.locator('.quick-input-list .monaco-list-row', { hasText: 'gonebox' }).first().innerText();
    assert.match(gone, /unreachable/);
    await pickQuickItem(session, 'gamma');
    await until(session.page, () => frame.locator('body').innerText(), /gamma/, 'gamma in the panel');
  });
});
