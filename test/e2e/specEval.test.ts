/**
 * A speculative-server eval from the editor, in a real VS Code on the demo host (started here as `npm run demo`
 * starts it, with the demo profile's settings): Evaluate Checkpoint on the drafter run's newest checkpoint with the
 * demo's "demo drafter τ (SGLang)" profile shows its requests' progress in a notification and records the result;
 * after the trainer saves the next checkpoint (the drafter server then serves it) the same for that one. Both show as
 * evals do: the tree's decoration, the eval table's rows with τ, and τ at each checkpoint's step on the metrics panel,
 * each τ the drafter server's own count for that checkpoint and the built-in prompts.
 *
 * The next test is the card (src/extension/eval/specCardView.ts): the run's card shows both checkpoint
 * rows; a paper row entered at temperature 0.6, where the evals ran at 0, joins them and the checklist flags the
 * temperature. The last one: a profile whose model the server does not serve says what to do, and Cancel on the
 * progress notification stops an eval with nothing recorded.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { Frame } from 'playwright-core';
import { startDemoHost, demoEvalProfiles, type DemoHost } from '../../src/demo/demoHost';
import { demoSettings } from '../../src/demo/profile';
import { demoGeneration } from '../../src/demo/specServer';
import { demoServerEvalProfile } from '../../src/demo/evalProfile';
import { builtinPrompts } from '../../src/core/eval/spec/server/profile';
import { LIVE_CHECKPOINT_EVERY, LIVE_START_STEP } from '../../src/demo/tree';
import { expandTreeRow, treeContextMenu, treeRow } from './treeRows';
import { hasMetricsFrame, metricsFrame } from './metricsView';
import { act, pickQuickItem, quickPickStep, until as untilRead } from './ui';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';

const PROFILE = String(demoServerEvalProfile().name);
const WRONG_MODEL = { ...demoServerEvalProfile(), name: 'drafter τ, wrong model', model: 'Qwen3-8B' };
const MAX_TOKENS = Number(demoServerEvalProfile().maxTokens);
/** The newest checkpoint when the demo starts, and the one the trainer saves next. */
const FIRST = Math.floor(LIVE_START_STEP / LIVE_CHECKPOINT_EVERY) * LIVE_CHECKPOINT_EVERY;
const SECOND = FIRST + LIVE_CHECKPOINT_EVERY;

let demoBase: string;
let demo: DemoHost;
let session: VSCodeSession;
let workspace: string;

before(async () => {
  demoBase = mkdtempSync(path.join(tmpdir(), 'rr-e2e-spec-demo-'));
  // The trainer saves only when the test ticks it (so which checkpoint the server serves is the test's to say).
  demo = await startDemoHost({ base: demoBase, lineIntervalMs: 3_600_000 });
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-spec-ws-'));
  // The demo's settings, and a copy of its server profile naming a model the server does not serve (the error test).
  session = await startVSCode({ workspaceFolder: workspace, settings: demoSettings(demo.paths, demo.hostConfig, [...demoEvalProfiles(), WRONG_MODEL]) });
});

after(async () => {
  await session?.close();
  await demo?.stop();
  for (const d of [workspace, demoBase]) if (d) rmSync(d, { recursive: true, force: true });
});

const until = (read: () => Promise<string>, match: RegExp, what: string, limitMs = 90_000): Promise<string> => untilRead(session.page, read, match, what, limitMs);

/** τ as SGLang counts it (completion tokens / verify steps) for the drafter of `step` on the built-in prompts. */
function expectedTau(step: number): number {
  let tokens = 0;
  let steps = 0;
  for (const p of builtinPrompts().prompts) {
    const t = demoGeneration(step, JSON.stringify((p as { messages: unknown }).messages), MAX_TOKENS);
    tokens += t.completionTokens;
    steps += t.steps;
  }
  return tokens / steps;
}

const notificationsText = async (): Promise<string> => (await session.notifications()).map((n) => n.message).join('\n');

/** Evaluate Checkpoint on a checkpoint row with the server profile: progress in the notification, then the result. */
async function evaluateWithServer(step: number): Promise<void> {
  const ckpt = `step_${step}`;
  await treeContextMenu(session, ckpt, /^Evaluate Checkpoint…$/);
  const profiles = await quickPickStep(session, new RegExp(`^Evaluate workspace/${ckpt}: profile$`));
  assert.deepEqual(profiles, ['Demo: acceptance length', PROFILE, WRONG_MODEL.name], 'command and server profiles side by side');
  await pickQuickItem(session, PROFILE);
  // Requests answered of the built-in prompts' 12, in the notification that also offers Cancel.
  const toasts = (): Promise<string> =>
    session.page.locator('.notifications-toasts .notification-list-item').evaluateAll((els) =>
      els
        .map((el) => {
          const message = ((el.querySelector('.notification-list-item-message') as HTMLElement | null)?.innerText ?? '').trim();
          const buttons = Array.from(el.querySelectorAll('.monaco-button')).map((b) => (b.textContent ?? '').trim());
          return `${message} [${buttons.join('|')}]`;
        })
        .join('\n'),
    );
  await until(toasts, new RegExp(`Evaluating ${ckpt} with demo drafter τ \\(SGLang\\)[^\\n]*requests \\d+ of 12[^\\n]*\\[[^\\]]*Cancel`), `the progress of ${ckpt}'s eval, with Cancel`);
  const done = await until(notificationsText, new RegExp(`${PROFILE.replace(/[()]/g, '\\$&')} of ${ckpt}: τ ([\\d.]+)`), `the result of ${ckpt}'s eval`);
  const tau = Number(new RegExp(`of ${ckpt}: τ ([\\d.]+)`).exec(done)![1]);
  assert.ok(Math.abs(tau - expectedTau(step)) < 1e-3, `${ckpt}: τ ${tau}, the server's counts give ${expectedTau(step)}`);
  assert.doesNotMatch(done, new RegExp(`of ${ckpt}: [^\\n]*does not name`), 'the server served the checkpoint evaluated');
}

/** The eval table's document (its webview's inner frame), once it shows a table with rows. */
async function evalTableFrame(): Promise<Frame> {
  let found: Frame | undefined;
  await act(session.page, {
    what: 'the eval table',
    action: () => treeContextMenu(session, 'workspace', /^Show Eval Results$/),
    effect: async () => {
      for (const f of session.page.frames()) {
        if (await f.evaluate(() => document.querySelector('table[aria-label="Evals"] tbody tr') !== null).catch(() => false)) {
          found = f;
          return true;
        }
      }
      return false;
    },
    retryAfterMs: 30_000,
  });
  return found!;
}

test('Evaluate Checkpoint with the demo drafter server on two checkpoints: progress, then τ in the tree, the eval table and the metrics panel', async () => {
  await withArtifactsOnFailure(session, 'spec-eval', async () => {
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, 'demo');
    await expandTreeRow(session, 'pct:200');
    await expandTreeRow(session, 'workspace');
    await treeRow(session, `step_${FIRST}`).waitFor({ state: 'visible', timeout: 60_000 });

    await evaluateWithServer(FIRST);
    await until(() => treeRow(session, `step_${FIRST}`).locator('.label-description').innerText(), /eval ✓ tau=/, 'the decoration of the first checkpoint');

    // The trainer saves the next checkpoint; the drafter server serves it from then on.
    while (!demo.trainer.currentStep || demo.trainer.currentStep < SECOND) demo.trainer.tick();
    await act(session.page, {
      what: `step_${SECOND} listed`,
      action: () => session.runCommand('Remote Runs: Refresh'),
      effect: () => treeRow(session, `step_${SECOND}`).isVisible(),
      retryAfterMs: 20_000,
    });
    await evaluateWithServer(SECOND);
    await until(() => treeRow(session, `step_${SECOND}`).locator('.label-description').innerText(), /eval ✓ tau=/, 'the decoration of the second checkpoint');

    // The eval table: a row per checkpoint, τ the server's count for each.
    const table = await evalTableFrame();
    await table.waitForFunction(() => document.querySelectorAll('table[aria-label="Evals"] tbody tr').length === 2, undefined, { timeout: 60_000 });
    const header = await table.locator('thead th').allInnerTexts();
    const tauCol = header.indexOf('tau');
    assert.ok(tauCol > 0, `a tau column: ${header.join(', ')}`);
    assert.ok(header.includes('acceptance_rate') && header.includes('p_1'), header.join(', '));
    const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td')).map((td) => td.textContent ?? '')));
    assert.deepEqual(rows.map((r) => [r[0], r[1], r[2], r[3]]), [
      [String(FIRST), `step_${FIRST}`, PROFILE, 'passed'],
      [String(SECOND), `step_${SECOND}`, PROFILE, 'passed'],
    ]);
    assert.ok(Math.abs(Number(rows[0]![tauCol]) - expectedTau(FIRST)) < 1e-9, `row ${FIRST}: ${rows[0]![tauCol]}`);
    assert.ok(Math.abs(Number(rows[1]![tauCol]) - expectedTau(SECOND)) < 1e-9, `row ${SECOND}: ${rows[1]![tauCol]}`);
    assert.notEqual(rows[0]![tauCol], rows[1]![tauCol], 'two drafters, two τ');

    // τ at each checkpoint's step on the run's metrics panel.
    await treeContextMenu(session, 'workspace', /^Open Metrics$/, { effect: () => hasMetricsFrame(session, 'panel') });
    const frame = await metricsFrame(session, 'panel', 60_000);
    const points = frame.locator('section.metric[data-metric="tau"] button.eval-point');
    await frame.waitForFunction(() => document.querySelectorAll('section.metric[data-metric="tau"] button.eval-point').length === 2, undefined, { timeout: 60_000 });
    const labels = await points.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? ''));
    // The chart's readout: 6 significant digits (src/webview/store.ts formatValue).
    const shown = (v: string): string => String(Number(Number(v).toPrecision(6)));
    assert.equal(labels[0]!.split(', ')[0], `Eval ${PROFILE} of step_${FIRST} (step ${FIRST}): tau ${shown(rows[0]![tauCol]!)}`);
    assert.equal(labels[1]!.split(', ')[0], `Eval ${PROFILE} of step_${SECOND} (step ${SECOND}): tau ${shown(rows[1]![tauCol]!)}`);
  });
});

/** The card's document (the cardview branch's webview), once it shows its table. */
async function cardFrame(): Promise<Frame> {
  let found: Frame | undefined;
  await act(session.page, {
    what: 'the speculative-decoding card of workspace',
    action: () => treeContextMenu(session, 'workspace', /card/i),
    effect: async () => {
      for (const f of session.page.frames()) {
        if (await f.evaluate(() => document.querySelector('table.spec-card') !== null).catch(() => false)) {
          found = f;
          return true;
        }
      }
      return false;
    },
    retryAfterMs: 30_000,
  });
  return found!;
}

test('the card of the drafter run: both checkpoint rows, a paper row entered at temperature 0.6, and the temperature flagged', async () => {
  await withArtifactsOnFailure(session, 'spec-card', async () => {
    const card = await cardFrame();
    await card.waitForFunction(() => document.querySelectorAll('table.spec-card tr[data-kind="checkpoint"]').length === 2, undefined, { timeout: 60_000 });
    // The paper row states τ the way the checkpoints' was computed (the card's form requires a definition).
    const definition = await card.locator('table.spec-card tr[data-kind="checkpoint"] td.tau').first().getAttribute('data-definition');
    assert.ok(definition, 'the checkpoint rows say how their τ is defined');
    await act(session.page, {
      what: 'the paper row form open',
      action: () => card.locator('button#add-paper').click(),
      effect: () => card.locator('[name="label"]').isVisible(),
      retryAfterMs: 10_000,
    });
    await card.locator('[name="label"]').fill('DFlash paper, Qwen3 (T=0.6)');
    await card.locator('[name="tau"]').fill('3.9');
    await card.locator('[name="tauDefinition"]').selectOption(definition);
    await card.locator('[name="setting.temperature"]').fill('0.6');
    await act(session.page, {
      what: 'the paper row saved',
      action: async () => {
        if (await card.locator('button#save-row').isVisible()) await card.locator('button#save-row').click();
      },
      effect: async () => (await card.locator('table.spec-card tr[data-kind="paper"]').count()) === 1,
      retryAfterMs: 20_000,
    });
    assert.equal(await card.locator('table.spec-card tr[data-kind="checkpoint"]').count(), 2);
    assert.equal(await card.locator('table.spec-card tr[data-kind="paper"]').count(), 1);
    await card.locator('li[data-setting="temperature"].differs').waitFor({ timeout: 30_000 });
  });
});

test('errors say what to do, and Cancel stops a server eval with nothing recorded', async () => {
  await withArtifactsOnFailure(session, 'spec-errors', async () => {
    const evalsDir = path.join(demo.tree.live.dir, '.remote-runs', 'evals');
    const recorded = (): string[] => (existsSync(evalsDir) ? readdirSync(evalsDir).filter((n) => !n.startsWith('.')) : []);
    const before = recorded();
    const ckpt = `step_${FIRST - LIVE_CHECKPOINT_EVERY}`;

    // A model the server does not serve: the error names what it serves and the field to set, with Open Settings.
    await treeContextMenu(session, ckpt, /^Evaluate Checkpoint…$/);
    await quickPickStep(session, new RegExp(`^Evaluate workspace/${ckpt}: profile$`));
    await pickQuickItem(session, WRONG_MODEL.name);
    const error = await session.waitForNotification(/does not serve "Qwen3-8B"/, 90_000);
    assert.equal(error.severity, 'error');
    assert.match(error.message, /the server http:\/\/127\.0\.0\.1:30000 does not serve "Qwen3-8B"; its \/v1\/models lists "Qwen3-27B"\. Set "model" to one of those/);
    const item = session.page.locator('.notifications-toasts .notification-list-item', { hasText: 'does not serve "Qwen3-8B"' });
    assert.ok((await item.locator('.monaco-button', { hasText: /^Open Settings$/ }).count()) > 0, 'the error offers Open Settings');

    // Cancel on the progress notification: the eval stops, nothing is recorded.
    const runsBefore = (session.vscodeLogs().match(/command remoteRuns\.evaluateCheckpoint failed \[cancelled\]/g) ?? []).length;
    await treeContextMenu(session, ckpt, /^Evaluate Checkpoint…$/);
    await quickPickStep(session, new RegExp(`^Evaluate workspace/${ckpt}: profile$`));
    await pickQuickItem(session, PROFILE);
    const progress = session.page.locator('.notifications-toasts .notification-list-item', { hasText: `Evaluating ${ckpt}` });
    await progress.locator('.monaco-button', { hasText: /^Cancel$/ }).waitFor({ state: 'visible', timeout: 60_000 });
    await act(session.page, {
      what: `the eval of ${ckpt} cancelled`,
      action: async () => {
        const cancel = progress.locator('.monaco-button', { hasText: /^Cancel$/ });
        if (await cancel.isVisible()) await cancel.click();
      },
      effect: async () => (session.vscodeLogs().match(/command remoteRuns\.evaluateCheckpoint failed \[cancelled\]/g) ?? []).length > runsBefore,
      retryAfterMs: 5_000,
    });
    assert.deepEqual(recorded(), before, 'nothing recorded by the failed or the cancelled eval');
    assert.doesNotMatch((await session.notifications()).map((n) => n.message).join('\n'), new RegExp(`of ${ckpt}: τ`));
  });
});
