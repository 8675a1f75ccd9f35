/**
 * What the e2e suites on the harness's test host share: the settings VS Code starts with, and the teardown.
 */
import { rmSync } from 'node:fs';
import type { TestHost } from '../harness/testHost';
import type { VSCodeSession } from './vscode';

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
