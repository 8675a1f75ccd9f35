/**
 * The tree keeps the user's place, in a real VS Code (code-server + Chromium) against a real OpenSSH server reached
 * through a link of the test's own: host → container → run expanded and a checkpoint selected stay expanded and
 * selected when the link drops and comes back (the timed refresh lists the host while it is down, so its rows are
 * replaced by "unreachable" and then listed again), and when the window reloads.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { expandTreeRow, expectRow, treeRow } from './treeRows';
import { settled } from './ui';
import { withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { startTestHost, type ProxiedHost, type TestHost } from '../harness/testHost';
import { startTcpProxy, type TcpProxy } from '../harness/tcpProxy';
import { closeSuite, openSuite } from './suite';
import { emptyStateText } from '../../src/core/emptyStates';

const HOST = 'flakybox';
const ROWS = '.part.sidebar .monaco-list-row[role=treeitem]';

let host: TestHost;
let link: ProxiedHost;
/** The link brought back up after a drop (closed with the suite). */
let restored: TcpProxy | undefined;
let session: VSCodeSession;
let workspace: string;
let checkpoint: string;

before(async () => {
  host = await startTestHost();
  link = await host.throughProxy();
  checkpoint = `step_${host.storySteps[0]}`;
  ({ session, workspace } = await openSuite(host, 'treestate', {
    'remoteRuns.hosts': [link.hostConfig(HOST)],
    // The timed refresh is what lists an expanded host again while its link is down (and once it is back).
    'remoteRuns.refreshIntervalSeconds': 2,
  }));
});

after(async () => {
  await restored?.close();
  await closeSuite(session, host, workspace);
});

/** Labels of the rows shown expanded, and of the rows shown selected, in order. */
async function treeState(): Promise<{ expanded: string[]; selected: string[] }> {
  // Read in one go (rows move while a listing lands); no named function inside: it runs in the page.
  const rows = await session.page.$$eval(ROWS, (els) =>
    els.map((r) => ({ label: r.querySelector('.label-name')?.textContent ?? '', expanded: r.getAttribute('aria-expanded') === 'true', selected: r.getAttribute('aria-selected') === 'true' })),
  );
  return { expanded: rows.filter((r) => r.expanded).map((r) => r.label), selected: rows.filter((r) => r.selected).map((r) => r.label) };
}

/** Waits until the tree shows the user's place again: the same rows expanded, the checkpoint selected. */
async function placeKept(what: string): Promise<void> {
  // The click that selected the checkpoint opened it too (its contents row below it).
  const want = { expanded: [HOST, 'pct:200', 'workspace', checkpoint], selected: [checkpoint] };
  const state = await settled(session.page, treeState, (s) => s.selected.length > 0 && s.expanded.length >= want.expanded.length, what, 120_000, 1_000);
  assert.deepEqual(state, want, what);
}

test('expanded rows and the selected checkpoint stay so when the link drops and comes back', async () => {
  await withArtifactsOnFailure(session, 'treestate-reconnect', async () => {
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, HOST);
    await expandTreeRow(session, 'pct:200');
    await expandTreeRow(session, 'workspace');
    // A click selects the checkpoint and opens it.
    await expandTreeRow(session, checkpoint);
    await placeKept('the place before the drop');

    const port = link.proxy.port;
    await link.proxy.close();
    try {
      // Down: the timed refresh lists the host and finds it unreachable; its targets (and the run below) are gone.
      const unreachable = emptyStateText('unreachable').title;
      await expectRow(session, HOST, /unreachable/i, 120_000);
      await treeRow(session, unreachable).waitFor({ state: 'visible', timeout: 120_000 });
      await treeRow(session, checkpoint).waitFor({ state: 'detached', timeout: 60_000 });
    } finally {
      // The link comes back whatever happened above: the test after this one needs the host.
      restored = await startTcpProxy(host.sshd.port, { port });
    }
    await expectRow(session, HOST, /connected/, 120_000);
    await placeKept('the place after the link came back');
  });
});

test('expanded rows and the selected checkpoint stay so when the window reloads', async () => {
  await withArtifactsOnFailure(session, 'treestate-reload', async () => {
    await placeKept('the place before the reload');
    await session.reloadWindow();
    await session.openViewContainer('Remote Runs');
    await placeKept('the place after the reload');
  });
});
