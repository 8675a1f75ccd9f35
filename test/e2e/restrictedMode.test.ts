/**
 * Remote Runs in VS Code's Restricted Mode (a folder not trusted), in a real VS Code: the extension runs
 * (`capabilities.untrustedWorkspaces.supported: "limited"`), the workspace's hosts and eval profiles are not applied
 * (`restrictedConfigurations`), the user's own hosts are, and one warning names every workspace setting that was
 * not applied — nothing dropped in silence.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { expandTreeRow, rowLabels, treeRow } from './treeRows';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { closeSuite, testHostSettings } from './suite';
import { startTestHost, type TestHost } from '../harness/testHost';

let host: TestHost;
let session: VSCodeSession;
let workspace: string;

before(async () => {
  host = await startTestHost();
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-ws-'));
  mkdirSync(path.join(workspace, '.vscode'));
  writeFileSync(
    path.join(workspace, '.vscode', 'settings.json'),
    JSON.stringify(
      {
        'remoteRuns.hosts': [host.hostConfig('repohost', { targets: ['host'], runRoots: [host.paths.runs] })],
        'remoteRuns.evalProfiles': [{ name: 'repo-eval', where: 'local', command: 'echo never' }],
        'remoteRuns.sshPath': '/tmp/not-a-program',
      },
      null,
      2,
    ),
  );
  session = await startVSCode({
    workspaceFolder: workspace,
    untrustedWorkspace: true,
    settings: {
      ...testHostSettings(host, [host.hostConfig('userbox', { targets: ['host'], runRoots: [host.paths.runs] })]),
    },
  });
});

after(async () => {
  await closeSuite(session, host, workspace);
});

test('in Restricted Mode the workspace hosts and profiles are not applied, the user hosts are, and a warning names all three settings', async () => {
  await withArtifactsOnFailure(session, 'restricted-mode', async () => {
    await session.openViewContainer('Remote Runs');
    const warning = await session.waitForNotification(/Remote Runs ignored 3 settings from this workspace/, 90_000);
    assert.equal(warning.severity, 'warning');
    // The user's host lists and connects; the repository's is not there.
    await expandTreeRow(session, 'userbox');
    await treeRow(session, 'host').waitFor({ state: 'visible', timeout: 60_000 });
    assert.ok(!(await rowLabels(session)).includes('repohost'), 'the workspace host is not applied');
    const logs = session.vscodeLogs();
    assert.match(logs, /workspace setting: remoteRuns\.sshPath \(in \.vscode\/settings\.json of [^)]+\) ignored: names a program/);
    assert.match(logs, /workspace setting: remoteRuns\.hosts \(in [^)]+\) ignored: .*not applied while this workspace is not trusted/);
    assert.match(logs, /workspace setting: remoteRuns\.evalProfiles \(in [^)]+\) ignored: .*not applied while this workspace is not trusted/);
  });
});
