/**
 * A cloned repository cannot run programs (issue 16, item 4), in a real VS Code against the real test sshd: the
 * workspace's `.vscode/settings.json` points `remoteRuns.sshPath` at a canary script that would leave a file behind
 * (and then run the real ssh, so a download through it would still work). A download over OpenSSH works, the canary
 * never runs, and a warning names the setting that was ignored. Control: the same canary named in the USER settings
 * does run — so the first test's "never ran" is a fact about where the setting came from, not a broken canary.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { expandTreeRow, treeContextMenu } from './treeRows';
import { machineSettingsFileOf, readSettingsFile, userSettingsOf } from './settingsFile';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { startTestHost, type TestHost } from '../harness/testHost';
import { testHostSettings } from './suite';
import { quickInputState } from './ui';

let host: TestHost;
let session: VSCodeSession;
let workspace: string;
let downloads: string;
let scratch: string;
let canary: string;
let marker: string;
const CKPT_BYTES = 5 * 1024 * 1024;

before(async () => {
  host = await startTestHost();
  scratch = mkdtempSync(path.join(tmpdir(), 'rr-e2e-canary-'));
  marker = path.join(scratch, 'canary-ran');
  canary = path.join(scratch, 'canary-ssh.sh');
  // Records that it ran, then is the real ssh: if it were used, the download would still succeed.
  writeFileSync(canary, `#!/bin/sh\nprintf '%s\\n' "$*" >> '${marker}'\nexec ssh "$@"\n`);
  chmodSync(canary, 0o755);
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-ws-'));
  mkdirSync(path.join(workspace, '.vscode'));
  writeFileSync(
    path.join(workspace, '.vscode', 'settings.json'),
    `// a repository someone else wrote\n{\n  "remoteRuns.sshPath": ${JSON.stringify(canary)},\n}\n`,
  );
  downloads = mkdtempSync(path.join(tmpdir(), 'rr-e2e-dl-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      ...testHostSettings(host, [host.hostConfig('dlbox', { targets: ['host'], runRoots: [host.paths.runs] })]),
      'remoteRuns.downloadDirectory': downloads,
      // OpenSSH or fail: the download must run an ssh program, so the canary would run if it were honoured.
      'remoteRuns.downloadClient': 'openssh',
    },
  });
});

after(async () => {
  await session?.close();
  await host?.stop();
  for (const d of [workspace, downloads, scratch]) if (d) rmSync(d, { recursive: true, force: true });
});

async function waitForFile(file: string, bytes: number): Promise<void> {
  if ((await fileOrPalette(file, bytes)) !== 'file') assert.fail(`${file} did not land with ${bytes} bytes`);
}

/**
 * Waits for the download to land, or for the palette's flow to open instead: a changed `remoteRuns` setting
 * refreshes the tree, and a right-click on a row drawn before that refresh reaches the command without its node
 * (VS Code no longer knows the row's handle), so the command asks for the host as it does from the palette.
 */
async function fileOrPalette(file: string, bytes: number): Promise<'file' | 'palette' | 'timeout'> {
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (existsSync(file) && statSync(file).size === bytes) return 'file';
    const q = await quickInputState(session.page);
    if (q.visible && /^Download Checkpoint \(/.test(q.title)) return 'palette';
    await session.page.waitForTimeout(250);
  }
  return 'timeout';
}

test('a workspace sshPath pointing at a canary: the warning names it, the download works over OpenSSH, the canary never runs', async () => {
  await withArtifactsOnFailure(session, 'trust-canary', async () => {
    await session.openViewContainer('Remote Runs');
    const warning = await session.waitForNotification(/Remote Runs ignored a setting from this workspace: remoteRuns\.sshPath/, 90_000);
    assert.equal(warning.severity, 'warning');
    assert.match(warning.message, /names a program/);
    await expandTreeRow(session, 'dlbox');
    await expandTreeRow(session, 'host');
    await expandTreeRow(session, 'story');
    await treeContextMenu(session, 'step_22000', /^Download Checkpoint…$/);
    const file = path.join(downloads, 'dlbox', 'story', 'step_22000', 'checkpoint.pt');
    await waitForFile(file, CKPT_BYTES);
    await session.waitForNotification(/downloaded story\/step_22000 .*verified by SHA-256/, 120_000);
    assert.match(session.vscodeLogs(), /download story\/step_22000: .* by OpenSSH,/, 'the bytes moved through an OpenSSH client');
    assert.ok(!existsSync(marker), `the canary ran: ${existsSync(marker) ? readFileSync(marker, 'utf8') : ''}`);
    assert.match(session.vscodeLogs(), /workspace setting: remoteRuns\.sshPath \(in \.vscode\/settings\.json of [^)]+\) ignored/);
  });
});

test('control: the same canary named in the user\'s own (remote machine) settings does run', async () => {
  await withArtifactsOnFailure(session, 'trust-canary-control', async () => {
    // code-server's extension host is remote: a machine setting of the user lives in the Machine (remote) settings.
    const userFile = machineSettingsFileOf(session.root);
    writeFileSync(userFile, JSON.stringify({ ...readSettingsFile(userFile), 'remoteRuns.sshPath': canary }, null, 2));
    // The changed user setting reaches the extension host; a download after that runs the canary.
    const deadline = Date.now() + 120_000;
    let attempt = 0;
    while (!existsSync(marker) && Date.now() < deadline) {
      const step = ['step_20000', 'step_18000', 'step_16000'][attempt++ % 3];
      await session.page.keyboard.press('Escape');
      await treeContextMenu(session, step, /^Download Checkpoint…$/);
      const landed = await fileOrPalette(path.join(downloads, 'dlbox', 'story', step, 'checkpoint.pt'), CKPT_BYTES);
      if (landed === 'palette') continue; // the row was from before the refresh: Escape closes the flow, and the next step is tried
      assert.equal(landed, 'file', `story/${step} did not land with ${CKPT_BYTES} bytes`);
      await session.waitForNotification(new RegExp(`downloaded story/${step} `), 120_000);
    }
    assert.ok(existsSync(marker), 'a user-level sshPath is the program downloads run');
    assert.match(readFileSync(marker, 'utf8'), /\S/);
  });
});

test('Add Host in a workspace that lists hosts of its own: the new host joins the user\'s list; the workspace\'s (with its jump host) is not copied there', async () => {
  await withArtifactsOnFailure(session, 'trust-add-host', async () => {
    // A repository's host with a jump host (a workspace may not route connections: HOST_FIELDS_USER_ONLY). Its
    // address is a closed port on this machine: the tree's attempt to list it goes nowhere else.
    const wsFile = path.join(workspace, '.vscode', 'settings.json');
    const wsHost = { name: 'ws-box', host: '127.0.0.1', port: 9, proxyJump: 'jump@127.0.0.1:9' };
    writeFileSync(wsFile, JSON.stringify({ 'remoteRuns.sshPath': canary, 'remoteRuns.hosts': [wsHost] }, null, 2));
    const row = (name: RegExp) => session.page.locator('.part.sidebar .monaco-list-row[role=treeitem] .label-name', { hasText: name });
    await row(/^ws-box$/).waitFor({ state: 'visible', timeout: 60_000 });
    const before = userSettingsOf(session.root)['remoteRuns.hosts'] as unknown[];
    assert.ok(Array.isArray(before) && before.length === 1, `control: the user's own list has dlbox only: ${JSON.stringify(before)}`);

    await session.runCommand('Remote Runs: Add Host');
    const input = session.page.locator('.quick-input-widget .quick-input-box input');
    const answer = async (title: string, text: string): Promise<void> => {
      await session.page.locator('.quick-input-widget .quick-input-title', { hasText: title }).waitFor({ timeout: 30_000 });
      await input.fill(text);
      await input.press('Enter');
    };
    await answer('Add Host (1/3)', 'trainer@127.0.0.1:9');
    await answer('Add Host (2/3)', 'added box');
    await answer('Add Host (3/3)', '/data/runs');
    // The workspace's list replaces the user's in this window (VS Code's most specific level wins): said, not shown.
    await session.waitForNotification(/added host added box to your user settings\. This workspace sets its own remoteRuns\.hosts/, 60_000);
    const hosts = userSettingsOf(session.root)['remoteRuns.hosts'];
    assert.deepEqual(hosts, [...before, { name: 'added box', host: '127.0.0.1', user: 'trainer', port: 9, runRoots: ['/data/runs'] }]);
    assert.doesNotMatch(JSON.stringify(userSettingsOf(session.root)), /ws-box|jump@/);
  });
});
