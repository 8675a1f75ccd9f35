/**
 * Evaluating a checkpoint in a real VS Code against the real test sshd: Evaluate from the checkpoint's context menu,
 * the eval's output shows in its terminal, and the tree shows its result on the checkpoint.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { expandTreeRow, treeContextMenu, treeRow } from './treeRows';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
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
      'remoteRuns.hosts': [host.hostConfig('evbox', { targets: ['host'], runRoots: [host.paths.runs] })],
      'remoteRuns.knownHostsFiles': [host.knownHostsFile],
      'remoteRuns.useSshConfigHosts': false,
      'remoteRuns.refreshIntervalSeconds': 0,
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
  await session?.close();
  await host?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
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

/** Polls `read` until it matches (the test's own timeout bounds the wait; no timing is asserted). */
async function until(read: () => Promise<string>, match: RegExp, what: string, limitMs = 60_000): Promise<string> {
  const deadline = Date.now() + limitMs;
  let last = '';
  while (Date.now() < deadline) {
    last = await read().catch(() => '');
    if (match.test(last)) return last;
    await session.page.waitForTimeout(250);
  }
  assert.fail(`${what}: ${match} not seen; last: ${JSON.stringify(last.slice(-500))}`);
}

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

test('after a window reload a running eval re-attaches (log from the start); Stop Eval from the tree stops it', async () => {
  await withArtifactsOnFailure(session, 'eval-reattach-stop', async () => {
    const step = host.storySteps[0];
    const ckpt = `step_${step}`;
    writeFileSync(path.join(host.paths.runs, 'story', '.remote-runs', 'hold'), '');
    await contextMenu(ckpt, /^Evaluate Checkpoint…$/);
    await terminalTab(`eval ${ckpt} · acceptance`);
    await until(terminalText, /waiting/, 'the eval waiting before the reload');
    await until(() => row(ckpt).locator('.label-description').innerText(), /eval: running/, 'running state');

    await session.runCommand('Developer: Reload Window');
    await session.page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60_000 });
    await session.openViewContainer('Remote Runs');
    await expandRow('evbox');
    await expandRow('host');
    await expandRow('story');
    await terminalTab(`eval ${ckpt} · acceptance`);
    await session.page.locator('.terminal-tabs-entry, .single-terminal-tab', { hasText: `eval ${ckpt} · acceptance` }).first().click();
    const text = await until(terminalText, new RegExp(`eval of step ${step}\\s+progress 1/3[\\s\\S]*waiting`), 'the re-attached log from its first line');
    assert.ok(!/eval ✓/.test(text), 'still running');

    await contextMenu(ckpt, /^Stop Eval$/);
    await until(() => row(ckpt).locator('.label-description').innerText(), /eval ✗ stopped/, 'stopped state');
    await until(terminalText, /── eval ✗ failed/, 'the terminal says the eval ended');
    const left = execFileSync('ps', ['-eo', 'args='], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(`remote-runs-eval ${evalsDir}`));
    assert.deepEqual(left, [], 'nothing of the eval is left running');
  });
});
