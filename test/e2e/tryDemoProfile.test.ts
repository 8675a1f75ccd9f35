/**
 * "Stop the Demo Host" takes out only what its start added (issue 17): a user whose settings already hold the demo's
 * eval profile (written earlier by `npm run demo`, identical to the one the demo adds) keeps it after Try the demo
 * host → Stop the Demo Host, in a real VS Code (code-server + Chromium). The demo's host entry and known_hosts file,
 * which are recognisably its own, still go, and so does its drafter server's profile, which that start added.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { eventually } from '../harness/assertKind';
import { demoEvalProfile, demoServerEvalProfile } from '../../src/demo/evalProfile';
import { treeRow } from './treeRows';
import { machineSettingsOf, userSettingsOf } from './settingsFile';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';

let session: VSCodeSession;
let workspace: string;

before(async () => {
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-demo-profile-ws-'));
  session = await startVSCode({ workspaceFolder: workspace, settings: { 'remoteRuns.evalProfiles': [demoEvalProfile()] } });
});

after(async () => {
  await session?.close();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

test('an identical demo eval profile that was there before the demo started stays when the demo stops', async () => {
  await withArtifactsOnFailure(session, 'demo-profile-kept', async () => {
    await session.openViewContainer('Remote Runs');
    await session.runCommand('Remote Runs: Try the Demo Host');
    await treeRow(session, 'demo').waitFor({ state: 'visible', timeout: 120_000 });
    // The command profile not added twice; the drafter server's, which was not there, added beside it.
    assert.deepEqual(userSettingsOf(session.root)['remoteRuns.evalProfiles'], [demoEvalProfile(), demoServerEvalProfile()], 'not added twice');
    await session.runCommand('Remote Runs: Stop the Demo Host');
    await eventually(() => userSettingsOf(session.root)['remoteRuns.hosts'] === undefined, 'the demo host taken out of the settings');
    await eventually(() => machineSettingsOf(session.root)['remoteRuns.knownHostsFiles'] === undefined, 'its known_hosts file taken out');
    await eventually(() => (userSettingsOf(session.root)['remoteRuns.evalProfiles'] as unknown[] | undefined)?.length === 1, 'the profile the demo added taken out');
    assert.deepEqual(userSettingsOf(session.root)['remoteRuns.evalProfiles'], [demoEvalProfile()], 'the profile that was there before stays');
  });
});
