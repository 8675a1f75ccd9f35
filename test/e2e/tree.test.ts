/**
 * The sidebar tree in a real VS Code (code-server + Chromium) against a real OpenSSH server with pct/docker
 * shims: host → container → run → checkpoints newest first with sizes, each empty state its own item, and
 * palette commands that act on it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { expandTreeRow, expectRow as expectTreeRow, rowLabels as treeRowLabels, rowText as treeRowText, treeRow, type Which } from './treeRows';
import { act } from './ui';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { startTestHost, type TestHost } from '../harness/testHost';
import { startSshd, type TestSshd } from '../harness/sshd';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { testHostSettings } from './suite';

// The README's picture is refreshed with `REMOTE_RUNS_SCREENSHOTS=1 npm run test:e2e`; a plain run writes into
// .test-tmp so tests never dirty the work tree.
const SCREENSHOT = path.join(
  __dirname,
  '..',
  '..',
  ...(process.env.REMOTE_RUNS_SCREENSHOTS ? ['media', 'screenshots'] : ['.test-tmp', 'e2e', 'screenshots']),
  'tree.png',
);

let host: TestHost;
/** A second server whose key is in no known_hosts file: connecting to it must ask first. */
let stranger: TestSshd;
let session: VSCodeSession;
let workspace: string;

before(async () => {
  host = await startTestHost();
  stranger = await startSshd();
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-ws-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      ...testHostSettings(host, [
        host.hostConfig('testbox'),
        host.hostConfig('roots', { targets: ['host'], runRoots: [host.paths.missing, host.paths.unreadable, host.paths.unrecognised, host.paths.empty] }),
        { name: 'newbox', host: '127.0.0.1', port: stranger.port, user: stranger.user, identityFile: stranger.clientKeyPath, targets: ['host'] },
      ]),
    },
  });
});

after(async () => {
  await session?.close();
  await stranger?.stop();
  await host?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

const rowLabels = (): Promise<string[]> => treeRowLabels(session);
const rowText = (label: string): Promise<string> => treeRowText(session, label);
const expandRow = (label: string, which: Which = 'first'): Promise<void> => expandTreeRow(session, label, which);
const expectRow = (label: string, re: RegExp, limitMs?: number): Promise<string> => expectTreeRow(session, label, re, limitMs);
const waitForRow = async (label: string): Promise<void> => void (await rowText(label));

test('host → container → run → checkpoints, newest first with sizes', async () => {
  await withArtifactsOnFailure(session, 'tree-story', async () => {
    await session.openViewContainer('Remote Runs');
    await expandRow('testbox');
    // Targets discovered over SSH: the bare host, pct and docker containers with their state.
    await waitForRow('pct:200');
    await expectRow('pct:201', /stopped/);
    await expectRow('docker:trainer', /running/);
    await expectRow('testbox', /connected/);
    const logins = host.sshd.acceptedLogins();
    await expandRow('pct:200');
    await waitForRow('workspace');
    await expectRow('workspace', /live/);
    await expandRow('workspace');
    const last = `step_${host.storySteps[host.storySteps.length - 1]}`;
    await waitForRow(last);
    const labels = await rowLabels();
    const steps = labels.filter((l) => /^step_\d+$/.test(l));
    assert.deepEqual(steps, host.storySteps.map((s) => `step_${s}`).reverse(), 'checkpoints newest first, in numeric step order (as the checkpoint picker lists them)');
    await expectRow(last, /3\.2 GB/);
    await expectRow(last, /newest/);
    await expectRow(`step_${host.storySteps[0]}`, /3\.2 GB/);
    await session.screenshot(SCREENSHOT);
    // Expanding a target whose runs have metrics logs began the host's OpenSSH session for them
    // (core.prepareMetrics): one more login than the tree's own connection, with no metrics panel open. (The
    // targets with no run expanded after this start none: the refresh test counts every login.)
    for (const end = Date.now() + 60_000; host.sshd.acceptedLogins() === logins && Date.now() < end; ) await new Promise((r) => setTimeout(r, 200));
    assert.equal(host.sshd.acceptedLogins() - logins, 1, 'one login for the metrics session, begun by the expansion');
  });
});

test('a stopped container says it is stopped, not empty', async () => {
  await withArtifactsOnFailure(session, 'tree-stopped', async () => {
    await expandRow('pct:201');
    await expectRow('Container is stopped', /pct:201 is stopped/); // the reason inline, not the raw kind
  });
});

test('a missing path, an unreadable folder, an unrecognised folder and an empty one each show their own message', async () => {
  await withArtifactsOnFailure(session, 'tree-empty-states', async () => {
    await expandRow('roots');
    await waitForRow('roots');
    // The bare-host target of 'roots' is the last row labelled "host" (testbox has one too, above it).
    await session.page.locator('.part.sidebar .monaco-list-row[role=treeitem] .label-name', { hasText: /^host$/ }).nth(1).waitFor({ timeout: 30_000 });
    await expandRow('host', 'last');
    await waitForRow(`${host.paths.missing}: Path does not exist`);
    await waitForRow(`${host.paths.unreadable}: Permission denied`);
    await waitForRow(`${host.paths.empty}: Empty directory`);
    const unrec = await rowText(`${host.paths.unrecognised}: No runs recognised`);
    assert.match(unrec, /saw: /, 'shows what it did see');
    assert.match(unrec, /README\.md|config\.yaml|data|model\.pt|scripts/);
  });
});

test('Refresh from the palette re-lists and keeps the tree expanded', async () => {
  await withArtifactsOnFailure(session, 'tree-refresh', async () => {
    const logins = host.sshd.acceptedLogins();
    await session.runCommand('Remote Runs: Refresh');
    await waitForRow(`step_${host.storySteps[0]}`);
    // Expansion survived the refresh: the checkpoints are still visible rows.
    const labels = await rowLabels();
    assert.ok(labels.includes(`step_${host.storySteps[0]}`));
    const errors = (await session.notifications()).filter((n) => n.severity === 'error');
    assert.deepEqual(errors, []);
    // Still one shared connection per host: a refresh opens no new one.
    assert.equal(host.sshd.acceptedLogins(), logins);
  });
});

test('an unknown host key is shown with its SHA256 fingerprint and, once trusted, appended to known_hosts', async () => {
  await withArtifactsOnFailure(session, 'tree-host-key', async () => {
    const fingerprint = execFileSync('ssh-keygen', ['-lf', '-'], { input: `${stranger.hostKeyPublic}\n`, encoding: 'utf8' }).split(' ')[1];
    const row = treeRow(session, 'newbox');
    const dialog = session.page.locator('.monaco-dialog-box');
    await act(session.page, {
      what: 'the host key dialog for newbox',
      action: async () => {
        if (!(await dialog.isVisible())) await row.click();
      },
      effect: () => dialog.isVisible(),
    });
    assert.ok((await dialog.innerText()).includes(fingerprint), 'the dialog shows the key fingerprint');
    assert.equal(readFileSync(host.knownHostsFile, 'utf8').includes(`:${stranger.port}]`), false, 'nothing written before the answer');
    await act(session.page, {
      what: 'the host key dialog answered',
      action: async () => {
        if (await dialog.isVisible()) await dialog.getByRole('button', { name: 'Trust and Connect' }).click();
      },
      effect: async () => !(await dialog.isVisible()),
    });
    await waitForRow('host');
    await expectRow('newbox', /connected/);
    const known = readFileSync(host.knownHostsFile, 'utf8');
    assert.ok(known.includes(`[127.0.0.1]:${stranger.port} ${stranger.hostKeyPublic}`), known);
  });
});
