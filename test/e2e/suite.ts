/**
 * What the e2e suites on the harness's test host share: the settings VS Code starts with, and the teardown.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { TestHost } from '../harness/testHost';
import { startVSCode, type VSCodeSession } from './vscode';

/**
 * The test host as the only host (`testbox`), or the suite's own `hosts` on it, trusted through the harness's
 * known_hosts, nothing taken from ~/.ssh/config, and no timed tree refresh (the suites refresh when they mean to).
 */
export function testHostSettings(host: TestHost, hosts: readonly unknown[] = [host.hostConfig('testbox')]): Record<string, unknown> {
  return {
    'remoteRuns.hosts': hosts,
    'remoteRuns.knownHostsFiles': [host.knownHostsFile],
    'remoteRuns.useSshConfigHosts': false,
    'remoteRuns.refreshIntervalSeconds': 0,
  };
}

/** Close VS Code, stop the host and remove the suite's workspace folder (each only if the suite got that far). */
export async function closeSuite(session: VSCodeSession | undefined, host: TestHost | undefined, workspace: string | undefined): Promise<void> {
  await session?.close();
  await host?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
}

/**
 * VS Code on a fresh workspace folder (`rr-e2e-NAME-ws-…`) with the test host's settings and `settings` over them. A
 * start that fails removes the folder it made.
 */
export async function openSuite(host: TestHost, name: string, settings: Record<string, unknown> = {}): Promise<{ workspace: string; session: VSCodeSession }> {
  const workspace = mkdtempSync(path.join(tmpdir(), `rr-e2e-${name}-ws-`));
  try {
    const session = await startVSCode({ workspaceFolder: workspace, settings: { ...testHostSettings(host), ...settings } });
    return { workspace, session };
  } catch (e) {
    rmSync(workspace, { recursive: true, force: true });
    throw e;
  }
}
