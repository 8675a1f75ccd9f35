/**
 * Downloading a checkpoint in a real VS Code against the real test sshd: from the tree's context menu and from
 * the palette's quick picks; the progress notification shows and the file lands, byte-sized as the remote one, its
 * bytes moved by the system's OpenSSH client (one extra login for the whole download).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { expandTreeRow, treeContextMenu } from './treeRows';
import { pickQuickItem, quickPickStep } from './ui';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { startTestHost, type TestHost } from '../harness/testHost';
import { testHostSettings } from './suite';

let host: TestHost;
let session: VSCodeSession;
let workspace: string;
let downloads: string;
const CKPT_BYTES = 1024 * 1024 * 1024;

before(async () => {
  host = await startTestHost();
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-ws-'));
  downloads = mkdtempSync(path.join(tmpdir(), 'rr-e2e-dl-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      ...testHostSettings(host, [host.hostConfig('dlbox', { targets: ['host'], runRoots: [host.paths.downloads] })]),
      'remoteRuns.downloadDirectory': downloads,
    },
  });
});

after(async () => {
  await session?.close();
  await host?.stop();
  for (const d of [workspace, downloads]) if (d) rmSync(d, { recursive: true, force: true });
});

const expandRow = (label: string) => expandTreeRow(session, label);
const contextMenu = (label: string, entry: RegExp) => treeContextMenu(session, label, entry);


async function waitForFile(file: string, bytes: number): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (existsSync(file) && statSync(file).size === bytes) return;
    await session.page.waitForTimeout(250);
  }
  assert.fail(`${file} did not land with ${bytes} bytes`);
}

test('right-click a checkpoint → Download: progress shows and the file lands under <dir>/<host>/<run>/<checkpoint>/', async () => {
  await withArtifactsOnFailure(session, 'download-tree', async () => {
    const atStart = host.sshd.acceptedLogins();
    await session.openViewContainer('Remote Runs');
    await expandRow('dlbox');
    await expandRow('host');
    await expandRow('dl-run');
    // The expansions may have begun the host's metrics session (core.prepareMetrics): its login is let land first,
    // so what is counted below is the download's alone.
    for (let last = -1, since = Date.now(); Date.now() - since < 3_000; await new Promise((r) => setTimeout(r, 200))) {
      if (host.sshd.acceptedLogins() !== last) (last = host.sshd.acceptedLogins()), (since = Date.now());
    }
    const logins = host.sshd.acceptedLogins();
    await contextMenu('step_300', /^Download Checkpoint…$/);
    await session.waitForNotification(/Downloading dl-run\/step_300/, 30_000);
    const file = path.join(downloads, 'dlbox', 'dl-run', 'step_300', 'checkpoint.pt');
    await waitForFile(file, CKPT_BYTES);
    await session.waitForNotification(/downloaded dl-run\/step_300 .*verified by SHA-256 on both sides/, 60_000);
    assert.ok(!existsSync(`${file}.part`));
    assert.deepEqual(readdirSync(path.dirname(file)), ['checkpoint.pt'], 'the checkpoint folder holds what the remote has');
    // OpenSSH's one login (its master) carried the bytes; the built-in client would have opened one per extra lane.
    // It is the host's one OpenSSH session, which the expansion of a run with metrics may have begun already: the
    // window logged in twice in all, once over the built-in client (the tree) and once over OpenSSH.
    assert.ok(host.sshd.acceptedLogins() - logins <= 1, 'at most one OpenSSH login for the download');
    assert.equal(host.sshd.acceptedLogins() - atStart, 2, 'one login for the tree, one OpenSSH login for the metrics session and the download');
  });
});

test('Download Checkpoint… from the palette walks run → checkpoint with quick picks', async () => {
  await withArtifactsOnFailure(session, 'download-palette', async () => {
    await session.page.keyboard.press('Escape');
    await session.runCommand('Remote Runs: Download Checkpoint…');
    // One host and one target: those steps are skipped; the run and the checkpoint are asked for. Each step's rows
    // are read once its title is that step's and they have stopped changing (never the previous step's rows).
    assert.deepEqual(await quickPickStep(session, /^Download Checkpoint \(3\/4\): run$/), ['dl-run']);
    await pickQuickItem(session, 'dl-run');
    const rows = await quickPickStep(session, /^Download Checkpoint \(4\/4\): checkpoint$/);
    assert.deepEqual(rows.slice(0, 3), ['step_300', 'step_200', 'step_100'], 'newest first');
    await pickQuickItem(session, 'step_100');
    const file = path.join(downloads, 'dlbox', 'dl-run', 'step_100', 'checkpoint.pt');
    await waitForFile(file, CKPT_BYTES);
    await session.waitForNotification(/downloaded dl-run\/step_100/, 60_000);
  });
});

test('downloading the same checkpoint again says it is already there instead of fetching', async () => {
  await withArtifactsOnFailure(session, 'download-again', async () => {
    const logins = host.sshd.acceptedLogins();
    await contextMenu('step_300', /^Download Checkpoint…$/);
    await session.waitForNotification(/step_300 is already there \(verified by SHA-256\)/, 30_000);
    assert.equal(host.sshd.acceptedLogins(), logins, 'no new connection for a check');
  });
});
