/**
 * An eval profile from a cloned repository's `.vscode/settings.json` that runs on this machine (issue 16, item 4),
 * in a real VS Code: Evaluate shows its command line in a modal and nothing runs without "Run"; after "Run" it
 * runs, and the next Evaluate runs it without asking; a changed command asks again.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { expandTreeRow, treeContextMenu } from './treeRows';
import { act } from './ui';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { startTestHost, type TestHost } from '../harness/testHost';
import { testHostSettings } from './suite';

let host: TestHost;
let session: VSCodeSession;
let workspace: string;
let scratch: string;

const markerOf = (name: string) => path.join(scratch, name);
const commandOf = (marker: string) => `touch '${markerOf(marker)}'; echo '{"ran": 1}'`;

function writeWorkspaceProfile(marker: string): void {
  writeFileSync(
    path.join(workspace, '.vscode', 'settings.json'),
    JSON.stringify({ 'remoteRuns.evalProfiles': [{ name: 'repo-eval', where: 'local', command: commandOf(marker) }] }, null, 2),
  );
}

before(async () => {
  host = await startTestHost();
  scratch = mkdtempSync(path.join(tmpdir(), 'rr-e2e-consent-'));
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-ws-'));
  mkdirSync(path.join(workspace, '.vscode'));
  writeWorkspaceProfile('first');
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      ...testHostSettings(host, [host.hostConfig('evbox', { targets: ['host'], runRoots: [host.paths.runs] })]),
    },
  });
});

after(async () => {
  await session?.close();
  await host?.stop();
  for (const d of [workspace, scratch]) if (d) rmSync(d, { recursive: true, force: true });
});

const dialog = () => session.page.locator('.monaco-dialog-box');

/** Evaluate on the newest checkpoint until the consent dialog shows; returns its text. */
async function evaluateUntilAsked(): Promise<string> {
  await act(session.page, {
    what: 'the consent dialog of the workspace eval profile',
    action: async () => {
      if (await dialog().isVisible()) return;
      await session.page.keyboard.press('Escape');
      await treeContextMenu(session, 'step_22000', /^Evaluate Checkpoint…$/);
    },
    effect: () => dialog().isVisible(),
    limitMs: 90_000,
  });
  return dialog().innerText();
}

async function answer(button: 'Run' | 'Cancel'): Promise<void> {
  await act(session.page, {
    what: `the consent dialog answered ${button}`,
    action: async () => {
      if (await dialog().isVisible()) await dialog().getByRole('button', { name: button, exact: true }).click();
    },
    effect: async () => !(await dialog().isVisible()),
  });
}

async function waitFor(what: string, check: () => boolean, limitMs = 90_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`${what}: not seen in ${limitMs / 1000} s`);
    await session.page.waitForTimeout(250);
  }
}

test('a workspace profile that runs locally shows its command line; Cancel runs nothing', async () => {
  await withArtifactsOnFailure(session, 'consent-cancel', async () => {
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, 'evbox');
    await expandTreeRow(session, 'host');
    await expandTreeRow(session, 'story');
    const text = await evaluateUntilAsked();
    assert.ok(text.includes(commandOf('first')), `the dialog shows the command line as written: ${text}`);
    assert.match(text, /on this machine/);
    await answer('Cancel');
    await waitFor('the log saying it was not run', () => /eval profile repo-eval from workspace settings: not run \(not confirmed\)/.test(session.vscodeLogs()));
    assert.ok(!existsSync(markerOf('first')), 'nothing ran without a yes');
  });
});

test('after Run it runs, and the next Evaluate runs it without asking', async () => {
  await withArtifactsOnFailure(session, 'consent-run', async () => {
    await evaluateUntilAsked();
    await answer('Run');
    await waitFor('the confirmed eval ran', () => existsSync(markerOf('first')));
    rmSync(markerOf('first'));
    await session.page.keyboard.press('Escape');
    await treeContextMenu(session, 'step_22000', /^Evaluate Checkpoint…$/);
    // It can only run without a click if no question was asked.
    await waitFor('the remembered eval ran again', () => existsSync(markerOf('first')));
    assert.equal(await dialog().isVisible(), false);
    assert.equal(session.vscodeLogs().match(/eval profile repo-eval from workspace settings: confirmed/g)?.length, 1, 'one yes, asked once');
  });
});

test('a changed command asks again', async () => {
  await withArtifactsOnFailure(session, 'consent-changed', async () => {
    writeWorkspaceProfile('second');
    // Until VS Code has read the changed file, Evaluate runs the approved command (touching "first" again).
    const text = await evaluateUntilAsked();
    assert.ok(text.includes(commandOf('second')), text);
    await answer('Cancel');
    await waitFor('the log saying it was not run', () => (session.vscodeLogs().match(/repo-eval from workspace settings: not run/g)?.length ?? 0) >= 2);
    assert.ok(!existsSync(markerOf('second')), 'the changed command did not run without a yes');
  });
});
