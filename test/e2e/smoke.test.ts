/**
 * Smoke test in a real VS Code: the packaged extension installs, its activity-bar container opens on the Hosts view,
 * palette commands run without an error, and closing the session leaves no process behind.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { findToolchain } from './toolchain';
import { userSettingsOf } from './settingsFile';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';

let session: VSCodeSession;
let workspace: string;

before(async () => {
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-ws-'));
  // A fresh HOME (the harness default): no ~/.ssh/config, no hosts, so the view shows its "no hosts" welcome.
  session = await startVSCode({ workspaceFolder: workspace });
});

after(async () => {
  await session?.close();
  rmSync(workspace, { recursive: true, force: true });
});

test('the Remote Runs container opens on the Hosts view, which explains that no host is configured', async () => {
  await withArtifactsOnFailure(session, 'smoke-view', async () => {
    await session.openViewContainer('Remote Runs');
    const hosts = session.view('Hosts');
    await hosts.waitFor({ state: 'visible' });
    // The welcome content is only shown once the extension activated and set `remoteRuns.noHosts`.
    await hosts.getByText('No hosts are configured yet.').waitFor({ state: 'visible', timeout: 30_000 });
    await hosts.getByRole('button', { name: 'Add Host' }).waitFor({ state: 'visible' });
  });
});

test('"Remote Runs: Refresh" runs from the palette without an error notification', async () => {
  await withArtifactsOnFailure(session, 'smoke-refresh', async () => {
    await session.runCommand('Remote Runs: Refresh');
    // Positive proof the command ran: the command wrapper logs each command to the "Remote Runs" log channel,
    // which "Show Log" (itself a palette command) puts in the panel.
    await session.runCommand('Remote Runs: Show Log');
    const log = session.page.locator('.part.panel .monaco-editor .view-lines');
    await log.filter({ hasText: 'remoteRuns.refresh' }).waitFor({ state: 'visible', timeout: 15_000 });
    assert.doesNotMatch(await log.innerText(), /\[error\]/);
    const errors = (await session.notifications()).filter((n) => n.severity === 'error');
    assert.deepEqual(errors, []);
  });
});

test('"Remote Runs: Add Host" asks for the address, name and run roots, writes the setting and shows the host', async () => {
  await withArtifactsOnFailure(session, 'smoke-add-host', async () => {
    await session.runCommand('Remote Runs: Add Host');
    const input = session.page.locator('.quick-input-widget .quick-input-box input');
    const answer = async (text: string): Promise<void> => {
      await input.waitFor({ state: 'visible' });
      await input.fill(text);
      await input.press('Enter');
    };
    await answer('trainer@gpu-box.internal:2222');
    // The name defaults to the host; replace it with our own.
    await session.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Add Host (2/3)' }).waitFor();
    await answer('gpu box');
    await session.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Add Host (3/3)' }).waitFor();
    await answer('/data/runs, ~/runs');
    await session.page.locator('.part.sidebar .monaco-list-row[role=treeitem] .label-name', { hasText: /^gpu box$/ }).waitFor({ state: 'visible', timeout: 30_000 });
    const settings = userSettingsOf(session.root);
    assert.deepEqual(settings['remoteRuns.hosts'], [
      { name: 'gpu box', host: 'gpu-box.internal', user: 'trainer', port: 2222, runRoots: ['/data/runs', '~/runs'] },
    ]);
  });
});

test('closing the session ends code-server, its extension host and the browser', async () => {
  const root = session.root;
  assert.notEqual(processesMentioning(root).length, 0, 'control: the session has processes while open');
  await session.close();
  assert.deepEqual(processesMentioning(root), []);
});

test('a missing browser fails loudly with the setup command instead of skipping', () => {
  const saved = process.env.CHROMIUM_PATH;
  process.env.CHROMIUM_PATH = '/nonexistent/chromium';
  try {
    assert.throws(() => findToolchain(), /chromium \(\/nonexistent\/chromium\).*bash test\/vscode\/setup\.sh/s);
  } finally {
    if (saved === undefined) delete process.env.CHROMIUM_PATH;
    else process.env.CHROMIUM_PATH = saved;
  }
});

/** `pid: cmdline` of every live process whose command line or environment names `marker`. */
function processesMentioning(marker: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      // The extension host's command line does not name the session, but it inherits HOME=<root>/home.
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
      if (cmdline.includes(marker) || environ.includes(marker)) found.push(`${pid}: ${cmdline.replace(/\0/g, ' ')}`);
    } catch {
      // exited meanwhile, or a kernel thread
    }
  }
  return found;
}
