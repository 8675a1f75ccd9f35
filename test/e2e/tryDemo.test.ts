/**
 * First run in a real VS Code (code-server + Chromium), as a newcomer meets it: no hosts configured, the Hosts view's
 * welcome offers Add Host, Use hosts from ~/.ssh/config and Try the demo host; "Try the demo host" starts the demo
 * training host inside the extension and the tree shows it with its Proxmox container pct:200 and the live run in it.
 * Stopping it takes it out of the tree and the settings and ends every process it started.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { eventually } from '../harness/assertKind';
import { expandTreeRow, treeRow } from './treeRows';
import { act, commandRuns } from './ui';
import { machineSettingsOf, userSettingsOf } from './settingsFile';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';

let session: VSCodeSession;
let workspace: string;
/** Where the extension keeps the demo: its global storage in the session's user-data-dir. */
let demoDir: string;

before(async () => {
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-try-demo-ws-'));
  // The harness default: a fresh HOME (no ~/.ssh/config) and no remoteRuns.hosts, so the welcome view shows.
  session = await startVSCode({ workspaceFolder: workspace });
  demoDir = path.join(session.root, 'user-data', 'User', 'globalStorage', 'remote-runs.remote-runs', 'demo');
});

after(async () => {
  await session?.close();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

function userSettings(): Record<string, unknown> {
  return userSettingsOf(session.root);
}

test('with no hosts, the welcome view offers exactly Add Host, Use hosts from ~/.ssh/config, Use contexts from ~/.kube/config and Try the demo host', async () => {
  await withArtifactsOnFailure(session, 'try-demo-welcome', async () => {
    await session.openViewContainer('Remote Runs');
    const hosts = session.view('Hosts');
    await hosts.getByText('No hosts are configured yet.').waitFor({ state: 'visible', timeout: 30_000 });
    const buttons = await hosts.locator('.welcome-view-content a.monaco-button, .welcome-view-content .monaco-button').allInnerTexts();
    assert.deepEqual(buttons.map((b) => b.trim()), ['Add Host', 'Use hosts from ~/.ssh/config', 'Use contexts from ~/.kube/config', 'Try the demo host']);
  });
});

test('"Try the demo host" starts the demo host: the tree shows it, its container pct:200 and the live run', async () => {
  await withArtifactsOnFailure(session, 'try-demo-start', async () => {
    const hosts = session.view('Hosts');
    // Done when the extension logged the command (a click that missed is made again; a command that ran, never).
    const before = commandRuns(session, 'remoteRuns.tryDemoHost');
    await act(session.page, {
      what: 'Try the demo host run from the welcome view',
      action: async () => {
        if (commandRuns(session, 'remoteRuns.tryDemoHost') === before) await hosts.getByRole('button', { name: 'Try the demo host' }).click();
      },
      effect: async () => commandRuns(session, 'remoteRuns.tryDemoHost') > before,
    });
    await treeRow(session, 'demo').waitFor({ state: 'visible', timeout: 120_000 });
    await expandTreeRow(session, 'demo');
    await treeRow(session, 'pct:200').filter({ hasText: /running/ }).waitFor({ state: 'visible', timeout: 30_000 });
    await treeRow(session, 'docker:hf-finetune').waitFor({ state: 'visible' });
    await expandTreeRow(session, 'pct:200');
    // The trainer appends a line a second: the run is marked live.
    await treeRow(session, 'workspace').filter({ hasText: /live/ }).waitFor({ state: 'visible', timeout: 30_000 });

    const settings = userSettings();
    const entry = (settings['remoteRuns.hosts'] as { name: string; host: string; port: number; identityFile: string }[])[0];
    assert.equal(entry.name, 'demo');
    assert.equal(entry.host, '127.0.0.1');
    assert.equal(entry.identityFile, path.join(demoDir, 'keys', 'client_ed25519'));
    // knownHostsFiles is machine scoped: VS Code writes it to the remote (Machine) settings of code-server's
    // remote extension host, as it would in a Remote-SSH window (docs/settings.md, "Remote-SSH windows").
    assert.equal(settings['remoteRuns.knownHostsFiles'], undefined);
    assert.deepEqual(machineSettingsOf(session.root)['remoteRuns.knownHostsFiles'], ['~/.ssh/known_hosts', path.join(demoDir, 'known_hosts')]);
    assert.deepEqual((settings['remoteRuns.evalProfiles'] as { name: string }[]).map((p) => p.name), ['Demo: acceptance length', 'demo drafter τ (SGLang)']);
    assert.match(readFileSync(path.join(demoDir, 'known_hosts'), 'utf8'), new RegExp(`^\\[127\\.0\\.0\\.1\\]:${entry.port} ssh-ed25519 `));
    // No "trust this host key?" question was needed, and nothing failed.
    const notes = await session.notifications();
    assert.deepEqual(notes.filter((n) => n.severity === 'error' || /fingerprint|host key/i.test(n.message)), []);
    assert.notEqual(machineProcesses().length, 0, 'control: the demo machine runs while the demo is on');
  });
});

test('"Stop the Demo Host" ends its processes and takes it out of the settings; the welcome view is back', async () => {
  await withArtifactsOnFailure(session, 'try-demo-stop', async () => {
    const machine = machineProcesses();
    await session.runCommand('Remote Runs: Stop the Demo Host');
    await session.view('Hosts').getByRole('button', { name: 'Try the demo host' }).waitFor({ state: 'visible', timeout: 30_000 });
    await eventually(() => machineSettingsOf(session.root)['remoteRuns.knownHostsFiles'] === undefined, 'the settings cleaned');
    assert.equal(userSettings()['remoteRuns.knownHostsFiles'], undefined);
    assert.equal(userSettings()['remoteRuns.hosts'], undefined);
    assert.equal(userSettings()['remoteRuns.evalProfiles'], undefined);
    await eventually(() => machine.every((pid) => !alive(pid)), `the demo machine's processes (${machine.join(', ')}) end`);
    assert.deepEqual(machineProcesses(), []);
  });
});

test('a demo started again ends with the window: closing the session leaves none of its processes', async () => {
  await withArtifactsOnFailure(session, 'try-demo-close', async () => {
    await session.runCommand('Remote Runs: Try the Demo Host');
    await treeRow(session, 'demo').waitFor({ state: 'visible', timeout: 60_000 });
  });
  const machine = machineProcesses();
  assert.notEqual(machine.length, 0, 'control: it runs again');
  await session.close();
  await eventually(() => machine.every((pid) => !alive(pid)), `the demo machine's processes (${machine.join(', ')}) end`);
  assert.deepEqual(machineProcesses(), []);
});

/**
 * Pids of the demo machine: the `unshare` holding it (its command line names the demo folder) and that process's
 * child, the namespace's pid 1, whose end ends everything inside.
 */
function machineProcesses(): number[] {
  const found: number[] = [];
  for (const pid of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(demoDir)) continue;
      found.push(Number(pid));
      const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
      found.push(...children.map(Number));
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

function alive(pid: number): boolean {
  try {
    // A zombie is gone for our purposes: it runs nothing.
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
