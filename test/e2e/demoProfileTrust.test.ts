/**
 * The profile `npm run demo` writes trusts the demo host's key in code-server (issue 33: the known_hosts setting,
 * machine-scoped, went into the user settings, which code-server's remote extension host does not read for it, so
 * the first expand asked to trust the demo's own key). A real code-server + Chromium opened on a profile written by
 * writeDemoProfile, against a demo host started here: the first expand of `demo` shows its containers, no host-key
 * dialog ever shows, and nothing was added to the user's own ~/.ssh/known_hosts. Then a checkpoint of the live
 * run, a real torch.save archive, shows its contents (its checkpoints were zero-filled, "not readable").
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { startDemoHost, demoEvalProfile, type DemoHost } from '../../src/demo/demoHost';
import { demoPaths } from '../../src/demo/paths';
import { demoSettings, writeDemoProfile } from '../../src/demo/profile';
import { expandTreeRow, expectRow, treeRow } from './treeRows';
import { LIVE_CHECKPOINT_EVERY, LIVE_START_STEP } from '../../src/demo/tree';
import { act } from './ui';
import { machineSettingsOf, userSettingsOf } from './settingsFile';
import { REPO_ROOT } from './toolchain';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';

let session: VSCodeSession;
let demo: DemoHost;
let base: string;
let workspace: string;

before(async () => {
  base = mkdtempSync(path.join(tmpdir(), 'rr-e2e-demo-profile-'));
  workspace = path.join(base, 'vscode', 'workspace');
  demo = await startDemoHost({ base });
  session = await startVSCode({
    workspaceFolder: workspace,
    // The demo profile as `npm run demo` writes it, into this session's user-data-dir.
    beforeStart: (userData) =>
      writeDemoProfile({ ...demoPaths(base), vscodeUserData: userData }, demoSettings(demo.paths, demo.hostConfig, [demoEvalProfile()]), REPO_ROOT),
  });
});

after(async () => {
  await session?.close();
  await demo?.stop();
  if (base) rmSync(base, { recursive: true, force: true });
});

test("the demo profile's first expand of the demo host connects without asking to trust its key", async () => {
  await withArtifactsOnFailure(session, 'demo-profile-trust', async () => {
    // Where each editor reads it: the desktop VS Code from the user settings, code-server from the Machine ones.
    assert.deepEqual(machineSettingsOf(session.root)['remoteRuns.knownHostsFiles'], [demo.paths.knownHosts]);
    assert.deepEqual(userSettingsOf(session.root)['remoteRuns.knownHostsFiles'], [demo.paths.knownHosts]);
    assert.equal((userSettingsOf(session.root)['remoteRuns.hosts'] as { port: number }[])[0].port, demo.port);

    await session.openViewContainer('Remote Runs');
    const dialog = session.page.locator('.monaco-dialog-box');
    let dialogSeen = false;
    const row = treeRow(session, 'demo');
    await row.waitFor({ state: 'visible', timeout: 60_000 });
    await act(session.page, {
      what: 'the demo host expanded: its containers listed',
      action: async () => {
        dialogSeen ||= await dialog.isVisible();
        if ((await row.getAttribute('aria-expanded')) !== 'true') await row.click();
      },
      effect: async () => {
        dialogSeen ||= await dialog.isVisible();
        return treeRow(session, 'pct:200').filter({ hasText: /running/ }).isVisible();
      },
      describe: async () => ((await dialog.isVisible()) ? `a dialog asks: ${(await dialog.innerText()).replace(/\s+/g, ' ')}` : 'no dialog'),
    });
    dialogSeen ||= await dialog.isVisible();
    assert.equal(dialogSeen, false, 'a host-key dialog showed');
    const notes = await session.notifications();
    assert.deepEqual(notes.filter((n) => n.severity === 'error' || /fingerprint|host key|authenticity/i.test(n.message)), []);
    // Nothing was trusted on the user's behalf: their own known_hosts was not written.
    const own = path.join(session.home, '.ssh', 'known_hosts');
    assert.equal(existsSync(own) && readFileSync(own, 'utf8').includes(`:${demo.port}]`), false, `${own} names the demo host`);
  });
});

test("a live-run checkpoint shows its contents: the edited model's layers, dtypes and shapes", async () => {
  await withArtifactsOnFailure(session, 'demo-profile-contents', async () => {
    // The newest when the demo started (the live run saves the next one about 15 s later).
    const newest = `step_${Math.floor(LIVE_START_STEP / LIVE_CHECKPOINT_EVERY) * LIVE_CHECKPOINT_EVERY}`;
    await expandTreeRow(session, 'pct:200');
    await expandTreeRow(session, 'workspace');
    await expectRow(session, newest, new RegExp(newest));
    await expandTreeRow(session, newest);
    await expandTreeRow(session, 'contents');
    await expectRow(session, 'layers › 2 › self_attn', /64 params · 256 B · 4 tensors/);
    await expandTreeRow(session, 'layers › 1');
    await expectRow(session, 'norm.weight', /float16 \[4\]/);
  });
});
