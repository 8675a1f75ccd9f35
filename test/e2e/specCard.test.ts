/**
 * The speculative-decoding card in a real VS Code against the real test sshd: two checkpoints of a run measured by
 * the real command line (`remote-runs eval PROFILE ADDRESS`, a speculative-server profile) against the stand-in
 * vLLM server (test/harness/specServer.ts) reached through the host's link, then "Open Speculative-Decoding Card"
 * from the run's context menu. A paper row at another temperature entered in the card's form lands in the workspace's
 * references file and on the card, and temperature is marked as differing; a bad row is refused naming its input and
 * writes nothing; Refresh shows an eval recorded meanwhile; a references file that cannot be read whole is not
 * rewritten and the card says why; a row is removed from the card.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { Frame } from 'playwright-core';
import { expandTreeRow, treeContextMenu } from './treeRows';
import { withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { closeSuite, openSuite, testHostSettings } from './suite';
import { act, pickQuickItem, quickInputState, quickPickStep, until } from './ui';
import { startTestHost, type TestHost } from '../harness/testHost';
import { TEST_USER } from '../harness/sshd';
import { startSpecServer, type SpecServer } from '../harness/specServer';
import { ensureBuiltCli, runBuiltCliAsync } from '../harness/builtCli';

let host: TestHost;
let session: VSCodeSession;
let workspace: string;
let spec: SpecServer;
let config: string;
/** The two evals measured before the window opens: [step, τ]. */
let measured: { step: number; tau: number; id: string }[] = [];

const HOST = 'evbox';
const RUN = `${HOST}/host/story`;

/** `remote-runs eval PROFILE evbox/host/story/STEP --json` with the built CLI; the stand-in server answers meanwhile. */
async function measure(profile: string, step: number): Promise<{ step: number; tau: number; id: string }> {
  const r = await runBuiltCliAsync(['eval', profile, `${RUN}/${step}`, '--json', '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
  assert.equal(r.code, 0, r.stderr);
  return { step: r.json.step, tau: r.json.result.tau, id: r.json.id };
}

before(async () => {
  host = await startTestHost();
  // The trainer (the test user) owns the run's .remote-runs folder, where its evals live.
  const own = path.join(host.paths.runs, 'story', '.remote-runs');
  mkdirSync(own, { recursive: true });
  execFileSync('chown', ['-R', `${TEST_USER}:${TEST_USER}`, own]);
  spec = await startSpecServer({ mode: 'vllm', k: 3, seed: 5 });
  const hostConfig = host.hostConfig(HOST, { targets: ['host'], runRoots: [host.paths.runs] });
  config = path.join(host.dir, 'config-card.json');
  writeFileSync(
    config,
    JSON.stringify({
      hosts: [hostConfig],
      evalProfiles: [
        { kind: 'speculative-server', name: 'drafter', server: spec.url, maxTokens: 32, concurrency: 2 },
        { kind: 'speculative-server', name: 'drafter-long', server: spec.url, maxTokens: 48, concurrency: 2 },
      ],
    }),
  );
  ensureBuiltCli();
  const [first, , last] = [host.storySteps[0]!, undefined, host.storySteps[host.storySteps.length - 1]!];
  measured = [await measure('drafter', first), await measure('drafter', last)];
  ({ workspace, session } = await openSuite(host, 'speccard', testHostSettings(host, [hostConfig])));
});

after(async () => {
  await spec?.stop();
  await closeSuite(session, host, workspace);
});

const referencesFile = (): string => path.join(workspace, '.vscode', 'remote-runs.references.json');

/** The card's document (its webview's inner frame), once it shows its buttons. */
async function findCard(): Promise<Frame | undefined> {
  for (const f of session.page.frames()) {
    if (await f.evaluate(() => document.querySelector('button#add-paper') !== null && document.querySelector('table.spec-card') !== null).catch(() => false)) return f;
  }
  return undefined;
}

async function cardFrame(timeoutMs = 60_000): Promise<Frame> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const f = await findCard();
    if (f) return f;
    if (Date.now() > deadline) throw new Error('no speculative-decoding card webview showing a table');
    await session.page.waitForTimeout(200);
  }
}

/** Each row of the card: kind, label, τ cell text. */
function rows(frame: Frame): Promise<[string, string, string][]> {
  return frame.locator('table.spec-card tbody tr').evaluateAll((trs) =>
    trs.map((tr) => [tr.getAttribute('data-kind') ?? '', tr.getAttribute('data-label') ?? '', tr.querySelector('td.tau')?.textContent ?? ''] as [string, string, string]),
  );
}

/** Opens the form with `button`, fills it, saves; done when `effect` holds (the button again if the form never opened). */
async function enterRow(frame: Frame, button: '#add-paper' | '#add-reference', fields: Record<string, string>, effect: () => Promise<boolean>): Promise<void> {
  await act(session.page, {
    what: `the form of ${button} open`,
    action: async () => {
      if (await frame.locator('form#row-form').isVisible()) return;
      await frame.locator(`button${button}`).click();
    },
    effect: () => frame.locator('form#row-form').isVisible(),
    retryAfterMs: 5_000,
  });
  for (const [name, value] of Object.entries(fields)) {
    const input = frame.locator(`[name="${name}"]`);
    if ((await input.evaluate((el) => el.tagName)) === 'SELECT') await input.selectOption(value);
    else await input.fill(value);
  }
  // Saved once: a second save would enter the row twice (the effect is checked long enough for the reply).
  await frame.locator('button#save-row').click();
  await until(session.page, async () => String(await effect()), 'true', `the effect of saving the row from ${button}`);
}

test('Open Speculative-Decoding Card from the run: both checkpoint rows; a paper row at temperature 1 entered in the form is on the card, temperature marked, and in the references file', async () => {
  await withArtifactsOnFailure(session, 'speccard-open', async () => {
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, HOST);
    await expandTreeRow(session, 'host');
    await treeContextMenu(session, 'story', /^Open Speculative-Decoding Card$/, { effect: async () => (await findCard()) !== undefined });
    const frame = await cardFrame();
    const [a, b] = measured;
    assert.deepEqual(await rows(frame), [
      ['checkpoint', `step_${a!.step}`, String(Number(a!.tau.toFixed(3)))],
      ['checkpoint', `step_${b!.step}`, String(Number(b!.tau.toFixed(3)))],
    ]);
    // τ says its definition (the eval's: 1 + accepted / verify steps, vLLM's per-request metrics).
    assert.equal(await frame.locator('tr[data-kind="checkpoint"] td.tau').first().getAttribute('data-definition'), 'one-plus-accepted-per-draft');
    assert.match(await frame.locator('p.note').allInnerTexts().then((t) => t.join('\n')), /no paper row is entered for evbox\/host\/story/);

    await enterRow(
      frame,
      '#add-paper',
      { label: 'DFlash Table 2', tau: '3.1', tauDefinition: 'one-plus-accepted-per-draft', pk: '0.8, 0.6, 0.4', source: 'arXiv Table 2', 'setting.temperature': '1', 'setting.maxTokens': '32', 'setting.numSpeculativeTokens': '3' },
      async () => (await frame.locator('tr[data-kind="paper"]').count()) === 1,
    );
    assert.equal(await frame.locator('form#row-form').isVisible(), false, 'the form closed once saved');
    assert.deepEqual((await rows(frame)).map((r) => r.slice(0, 2)), [
      ['checkpoint', `step_${a!.step}`],
      ['checkpoint', `step_${b!.step}`],
      ['paper', 'DFlash Table 2'],
    ]);
    assert.equal(await frame.locator('tr[data-kind="paper"] td.tau').innerText(), '3.1');
    // The checkpoints' τ against the paper's, and the temperature that differs, in each checkpoint's row.
    const vs = await frame.locator('tr[data-kind="checkpoint"] td.vs').allInnerTexts();
    const diff = (tau: number) => `${tau - 3.1 >= 0 ? '+' : '−'}${Number(Math.abs(tau - 3.1).toFixed(3))}`;
    assert.ok(vs[0]!.startsWith(diff(a!.tau)), `${vs[0]} starts with ${diff(a!.tau)}`);
    assert.match(vs[0]!, /! temperature differs/);
    // The checklist marks temperature (0 measured, 1 in the paper); max tokens and K agree.
    assert.equal(await frame.locator('li[data-setting="temperature"].differs').count(), 1);
    assert.match(await frame.locator('li[data-setting="temperature"]').innerText(), new RegExp(`step_${a!.step}: 0.*paper: DFlash Table 2: 1`, 's'));
    assert.equal(await frame.locator('li[data-setting="maxTokens"]').getAttribute('class'), 'same');
    assert.equal(await frame.locator('li[data-setting="numSpeculativeTokens"]').getAttribute('class'), 'same');

    // The row is in the workspace's references file, version 2, for this run.
    const file = JSON.parse(readFileSync(referencesFile(), 'utf8'));
    assert.equal(file.version, 2);
    assert.deepEqual(file.specRows, [
      { run: RUN, kind: 'paper', label: 'DFlash Table 2', tauDefinition: 'one-plus-accepted-per-draft', settings: { temperature: 1, maxTokens: 32, numSpeculativeTokens: 3 }, tau: 3.1, pk: [0.8, 0.6, 0.4], source: 'arXiv Table 2' },
    ]);
  });
});

test('a bad row is refused naming its inputs and writes nothing; a reference row is added beside the paper row', async () => {
  await withArtifactsOnFailure(session, 'speccard-bad-row', async () => {
    const frame = await cardFrame();
    const before = readFileSync(referencesFile(), 'utf8');
    await enterRow(frame, '#add-reference', { label: 'EAGLE3', tau: 'six', tauDefinition: '', 'setting.temperature': 'warm' }, async () => (await frame.locator('#form-error li').count()) > 0);
    const errors = await frame.locator('#form-error li').allInnerTexts();
    assert.ok(errors.some((e) => /"tau" must be a number ≥ 1 .*got "six"/.test(e)), errors.join('\n'));
    assert.ok(errors.some((e) => /"tauDefinition" must say how τ was computed/.test(e)), errors.join('\n'));
    assert.ok(errors.some((e) => /^setting\.temperature: must be a number, got "warm"$/.test(e)), errors.join('\n'));
    assert.equal(await frame.locator('[name="tau"]').getAttribute('aria-invalid'), 'true');
    assert.equal(readFileSync(referencesFile(), 'utf8'), before, 'nothing written');
    assert.equal(await frame.locator('tr[data-kind="reference"]').count(), 0);

    // Corrected in the same form: saved.
    await frame.locator('[name="tau"]').fill('2.4');
    await frame.locator('[name="tauDefinition"]').selectOption('one-plus-accepted-per-draft');
    await frame.locator('[name="setting.temperature"]').fill('0');
    await frame.locator('button#save-row').click();
    await until(session.page, async () => String(await frame.locator('tr[data-kind="reference"]').count()), '1', 'the reference row on the card');
    assert.deepEqual((await rows(frame)).slice(2).map((r) => r.slice(0, 2)), [['paper', 'DFlash Table 2'], ['reference', 'EAGLE3']]);
    assert.equal(JSON.parse(readFileSync(referencesFile(), 'utf8')).specRows.length, 2);
  });
});

test('Refresh shows an eval recorded meanwhile by the command line', async () => {
  await withArtifactsOnFailure(session, 'speccard-refresh', async () => {
    const frame = await cardFrame();
    const last = host.storySteps[host.storySteps.length - 1]!;
    const third = await measure('drafter-long', last);
    await act(session.page, {
      what: 'the eval of drafter-long on the card',
      action: () => frame.locator('button#refresh').click(),
      effect: async () => (await frame.locator('tr[data-kind="checkpoint"]').count()) === 3,
      retryAfterMs: 15_000,
    });
    const row = frame.locator('tr[data-kind="checkpoint"]', { has: frame.locator('td.profile', { hasText: /^drafter-long$/ }) });
    assert.equal(await row.getAttribute('data-label'), `step_${last}`);
    assert.equal(await row.locator('td.tau').innerText(), String(Number(third.tau.toFixed(3))));
    // max tokens 48 against 32 elsewhere: marked.
    assert.equal(await frame.locator('li[data-setting="maxTokens"].differs').count(), 1);
  });
});

test('a references file that cannot be read whole is not rewritten: the card says why; fixed, a row is removed', async () => {
  await withArtifactsOnFailure(session, 'speccard-blocked', async () => {
    const frame = await cardFrame();
    const good = readFileSync(referencesFile(), 'utf8');
    const broken = JSON.parse(good);
    broken.lines = [{ metric: 'tau', value: 'high', label: 'hand-written' }];
    const brokenText = `${JSON.stringify(broken, null, 2)}\n`;
    writeFileSync(referencesFile(), brokenText);
    const blocked = await until(session.page, () => frame.locator('p.blocked').innerText().catch(() => ''), /lines\[0\]: "value" must be a finite number/, 'the card saying the file cannot be written');
    assert.match(blocked, /^Rows cannot be added or removed: /);
    assert.equal(await frame.locator('tr[data-kind="paper"] button.remove-row').isDisabled(), true);
    // Saving a row anyway: refused with the reason, the hand-edited file left as it is.
    await enterRow(frame, '#add-reference', { label: 'another', tau: '2', tauDefinition: 'one-plus-accepted-per-draft' }, async () => (await frame.locator('#form-error li').count()) > 0);
    assert.match((await frame.locator('#form-error li').allInnerTexts()).join('\n'), /holds what could not be read .*nothing was written/);
    assert.equal(readFileSync(referencesFile(), 'utf8'), brokenText);
    await frame.locator('button#cancel-row').click();

    // Fixed by hand: the rows can be removed again.
    writeFileSync(referencesFile(), good);
    await until(session.page, async () => String(await frame.locator('p.blocked').count()), '0', 'the blocked message gone');
    await act(session.page, {
      what: 'the reference row removed',
      action: async () => {
        const b = frame.locator('tr[data-kind="reference"] button.remove-row');
        if ((await b.count()) > 0 && (await b.isEnabled())) await b.click();
      },
      effect: async () => (await frame.locator('tr[data-kind="reference"]').count()) === 0,
      retryAfterMs: 10_000,
    });
    const file = JSON.parse(readFileSync(referencesFile(), 'utf8'));
    assert.deepEqual(file.specRows.map((r: { kind: string; label: string }) => [r.kind, r.label]), [['paper', 'DFlash Table 2']]);
  });
});

test('from the command palette: the run picked from those the tree listed; the card already open is revealed, not opened twice', async () => {
  await withArtifactsOnFailure(session, 'speccard-palette', async () => {
    const tabs = session.page.locator('.tabs-container .tab', { hasText: 'Card: story' });
    assert.equal(await tabs.count(), 1);
    // Another editor in front of the card first, so its reveal shows.
    await session.runCommand('Remote Runs: Show Eval Results');
    // The run's pick shown, its rows settled, before picking (the palette closing is not the pick).
    await quickPickStep(session, /^Show the eval results of a run$/, (labels) => labels.includes('story'));
    await pickQuickItem(session, 'story');
    await until(session.page, async () => String(await session.page.locator('.tabs-container .tab.active').innerText().catch(() => '')), /Evals: story/, 'the eval table in front');
    // The run's pick gone for good (not fading out, when F1 would find it still there and type into it).
    await until(session.page, async () => String((await quickInputState(session.page)).visible), 'false', 'the quick pick closed');
    await session.runCommand('Remote Runs: Open Speculative-Decoding Card');
    await quickPickStep(session, /^Open the speculative-decoding card of a run$/, (labels) => labels.includes('story'));
    await pickQuickItem(session, 'story');
    await until(session.page, async () => String(await session.page.locator('.tabs-container .tab.active').innerText().catch(() => '')), /Card: story/, 'the card in front again');
    assert.equal(await tabs.count(), 1, 'one card per run');
    const frame = await cardFrame();
    assert.equal(await frame.locator('tr[data-kind="checkpoint"]').count(), 3);
  });
});
