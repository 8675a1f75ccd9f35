/**
 * Remote strings never become markup (issue 8), checked in a real VS Code (code-server + Chromium) over the real
 * test sshd: a run folder named `<img src=x onerror=…>`, metric keys made of tags and a script, and an eval whose
 * output and result key hold markup. The tree, the metrics webview, the eval's terminal and the checkpoint's
 * result all show them as text; the DOM of the workbench and of the webview holds no element they could have
 * injected, and no handler ran. The webview's own CSP is read from its real document and an inline script without
 * the nonce is tried there: it must not run.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { Frame } from 'playwright-core';
import { expandTreeRow, treeContextMenu, treeRow } from './treeRows';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { closeSuite, testHostSettings } from './suite';
import { until as untilRead } from './ui';
import { hasMetricsFrame, metricsFrame } from './metricsView';
import { startTestHost, type TestHost } from '../harness/testHost';
import { TEST_USER } from '../harness/sshd';

/** Each payload sets a marker on `window` if it ever runs. */
const RUN = `<img src=x onerror="window.__pwned='run'">`;
const KEYS = ['loss', '<b>bold</b>', `<img src=x onerror="window.__pwned='key'">`, `<script>window.__pwned='script'</script>`];
const EVAL_KEY = `<img src=x onerror="window.__pwned='eval'">`;
const EVAL_LINE = `<script>window.__pwned='terminal'</script><b>not bold</b>`;

let host: TestHost;
let session: VSCodeSession;
let workspace: string;

before(async () => {
  host = await startTestHost();
  const root = path.join(host.dir, 'markup-runs');
  const run = path.join(root, RUN);
  for (const step of [100, 200]) {
    mkdirSync(path.join(run, 'checkpoints', `step_${step}`), { recursive: true });
    writeFileSync(path.join(run, 'checkpoints', `step_${step}`, 'checkpoint.pt'), 'w'.repeat(step));
  }
  mkdirSync(path.join(run, 'logs'));
  const rows = Array.from({ length: 40 }, (_, i) => JSON.stringify(Object.fromEntries([['step', (i + 1) * 5], ...KEYS.map((k, j) => [k, 1 / (i + 1 + j)])])));
  writeFileSync(path.join(run, 'logs', 'train.jsonl'), `${rows.join('\n')}\n`);
  mkdirSync(path.join(run, '.remote-runs'));
  execFileSync('chmod', ['-R', 'a+rX', root]);
  execFileSync('chown', ['-R', `${TEST_USER}:${TEST_USER}`, path.join(run, '.remote-runs')]);
  // Inside a container: a readable run beside a folder the login user cannot enter (root's, mode 700).
  const partial = path.join(host.containers.trainer.workspace, 'partial');
  for (const dir of ['open-run', 'locked/secret-run']) {
    mkdirSync(path.join(partial, dir, 'checkpoints', 'step_1'), { recursive: true });
    writeFileSync(path.join(partial, dir, 'checkpoints', 'step_1', 'm.pt'), 'm');
  }
  execFileSync('chmod', ['-R', 'a+rX', partial]);
  execFileSync('chmod', ['700', path.join(partial, 'locked')]);
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-markup-ws-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      ...testHostSettings(host, [
        host.hostConfig('markupbox', { targets: ['host'], runRoots: [root] }),
        host.hostConfig('partialbox', { targets: ['docker:trainer'], runRoots: ['/workspace/partial'] }),
      ]),
      'remoteRuns.evalProfiles': [
        // Values through env (taken literally), so the test's own quoting cannot be what keeps them inert.
        { name: 'markup', where: 'target', command: 'printf "%s\\n" "$EVAL_LINE" "$EVAL_RESULT"', env: { EVAL_LINE, EVAL_RESULT: `{${JSON.stringify(EVAL_KEY)}: 1.5}` } },
      ],
      'terminal.integrated.gpuAcceleration': 'off',
    },
  });
});

after(async () => {
  await closeSuite(session, host, workspace);
});

/**
 * Elements a payload could have created (VS Code's and the webview host's own inline scripts are not ours), and
 * whether any payload ran, in one document.
 */
async function injected(frame: Frame | VSCodeSession['page']): Promise<{ elements: string[]; pwned: unknown }> {
  return frame.evaluate(() => ({
    elements: Array.from(document.querySelectorAll('img[src="x"], [onerror], b, script'))
      .filter((e) => e.tagName !== 'SCRIPT' || (e.textContent ?? '').includes('__pwned'))
      .map((e) => e.outerHTML.slice(0, 80)),
    pwned: (window as unknown as { __pwned?: unknown }).__pwned,
  }));
}

const until = (read: () => Promise<string>, match: RegExp | string, what: string): Promise<string> => untilRead(session.page, read, match, what);

test('the tree shows a run named <img …> as its text, and the workbench DOM gains no element', async () => {
  await withArtifactsOnFailure(session, 'markup-tree', async () => {
    // On a loaded machine the extension host can start well after the workbench: wait for our view container.
    await session.page.locator('.part.activitybar a.action-label[aria-label="Remote Runs"]').waitFor({ state: 'visible', timeout: 180_000 });
    await session.openViewContainer('Remote Runs');
    await treeRow(session, 'markupbox').waitFor({ state: 'visible', timeout: 180_000 }); // activation, under load
    await expandTreeRow(session, 'markupbox');
    await expandTreeRow(session, 'host');
    const row = treeRow(session, RUN);
    await row.waitFor({ state: 'visible', timeout: 30_000 });
    assert.equal(await row.locator('.label-name').textContent(), RUN);
    await expandTreeRow(session, RUN);
    await treeRow(session, 'step_200').waitFor({ state: 'visible', timeout: 30_000 });
    await row.hover(); // the tooltip is built from the name too
    await session.page.waitForTimeout(1500);
    assert.deepEqual(await injected(session.page), { elements: [], pwned: undefined });
  });
});

test('the metrics webview shows markup metric keys and the run name as text; no element injected, nothing ran', async () => {
  await withArtifactsOnFailure(session, 'markup-metrics', async () => {
    await treeContextMenu(session, RUN, /^Open Metrics$/, { effect: () => hasMetricsFrame(session, 'panel') });
    const frame = await metricsFrame(session, 'panel');
    const keys = await frame.locator('section.metric').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.metric));
    assert.deepEqual([...keys].sort(), [...KEYS].sort());
    const shown = await frame.locator('body').innerText();
    for (const k of KEYS) assert.ok(shown.includes(k), `the key ${k} is shown as text`);
    assert.ok(shown.includes(RUN), 'the run name is shown as text');
    assert.deepEqual(await injected(frame), { elements: [], pwned: undefined });
    assert.deepEqual(await injected(session.page), { elements: [], pwned: undefined });
  });
});

test("the webview's real document has the strict CSP, and an inline script without the nonce does not run there", async () => {
  await withArtifactsOnFailure(session, 'markup-csp', async () => {
    const frame = await metricsFrame(session, 'panel');
    const csp = await frame.evaluate(() => document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.getAttribute('content') ?? '');
    assert.match(csp, /^default-src 'none'; script-src 'nonce-[A-Za-z0-9+/=]+'; /, 'scripts only by nonce');
    assert.doesNotMatch(csp, /unsafe|connect-src|frame-src/);
    const ran = await frame.evaluate(async () => {
      const s = document.createElement('script');
      s.textContent = 'window.__inlineRan = true';
      document.body.append(s);
      const img = document.createElement('img');
      img.setAttribute('src', 'x');
      img.setAttribute('onerror', 'window.__handlerRan = true');
      document.body.append(img);
      await new Promise((r) => setTimeout(r, 500));
      const w = window as unknown as { __inlineRan?: boolean; __handlerRan?: boolean };
      img.remove();
      s.remove();
      return { inline: w.__inlineRan ?? false, handler: w.__handlerRan ?? false };
    });
    assert.deepEqual(ran, { inline: false, handler: false }, 'the CSP blocks inline scripts and handlers');
  });
});

test('an eval whose output and result key hold markup: text in its terminal and on the checkpoint, nothing injected', async () => {
  await withArtifactsOnFailure(session, 'markup-eval', async () => {
    await treeContextMenu(session, 'step_200', /^Evaluate Checkpoint…$/);
    await session.page.locator('.terminal-tabs-entry, .single-terminal-tab', { hasText: 'eval step_200 · markup' }).first().waitFor({ timeout: 60_000 });
    const text = await until(() => session.page.locator('.terminal-wrapper.active .xterm-rows').innerText(), /eval ✓ passed/, 'terminal output');
    assert.ok(text.includes(EVAL_LINE), `the terminal shows the line as text: ${text}`);
    const description = await until(() => treeRow(session, 'step_200').locator('.label-description').innerText(), 'eval ✓', 'checkpoint description');
    assert.ok(description.includes(`${EVAL_KEY}=1.5`), description);
    await session.page.waitForTimeout(1000);
    assert.deepEqual(await injected(session.page), { elements: [], pwned: undefined });
    const frame = await metricsFrame(session, 'panel');
    assert.deepEqual(await injected(frame), { elements: [], pwned: undefined });
  });
});

test('a folder the user cannot read beside a run: the tree shows the run and a row saying what could not be read', async () => {
  await withArtifactsOnFailure(session, 'markup-unreadable', async () => {
    await expandTreeRow(session, 'partialbox');
    await expandTreeRow(session, 'docker:trainer');
    await treeRow(session, 'open-run').waitFor({ state: 'visible', timeout: 30_000 });
    const note = treeRow(session, '/workspace/partial: 1 place could not be read');
    await note.waitFor({ state: 'visible', timeout: 30_000 });
    assert.equal(await treeRow(session, 'secret-run').count(), 0, 'nothing is invented for the unreadable folder');
  });
});
