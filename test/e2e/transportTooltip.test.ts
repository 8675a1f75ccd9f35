/**
 * Issue 16 item 1 in a real VS Code: a host whose only way in is a user certificate (an sshd with
 * `TrustedUserCAKeys` and `AuthorizedKeysFile none`; the certificate as `KEY-cert.pub` beside the host's identity
 * file) is listed over the system OpenSSH, and its tooltip says so and why; a plain host's says the built-in client.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { expandTreeRow, expectRow, treeRow } from './treeRows';
import { hoverUntil } from './ui';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { startTestHost, type TestHost } from '../harness/testHost';
import { startSshd, TEST_USER, type TestSshd } from '../harness/sshd';

let host: TestHost;
let certOnly: TestSshd;
let session: VSCodeSession;
let workspace: string;
let certs: string;

before(async () => {
  host = await startTestHost();
  certs = mkdtempSync(path.join(host.dir, 'e2e-certs-'));
  chmodSync(certs, 0o755);
  const kg = (args: string[]): void => void execFileSync('ssh-keygen', ['-q', ...args], { stdio: 'ignore' });
  kg(['-t', 'ed25519', '-N', '', '-f', path.join(certs, 'user_ca')]);
  kg(['-t', 'ed25519', '-N', '', '-f', path.join(certs, 'id_cert')]);
  kg(['-s', path.join(certs, 'user_ca'), '-I', 'rr-e2e', '-n', TEST_USER, '-V', '-5m:+2h', path.join(certs, 'id_cert.pub')]);
  certOnly = await startSshd({ extraConfig: [`TrustedUserCAKeys ${path.join(certs, 'user_ca.pub')}`, 'Match all', '  AuthorizedKeysFile none'] });
  const kh = path.join(certs, 'known_hosts');
  writeFileSync(kh, `${certOnly.knownHostsLine}\n`);
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-ws-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      'remoteRuns.hosts': [
        host.hostConfig('plainbox', { targets: ['host'] }),
        { name: 'certbox', host: '127.0.0.1', port: certOnly.port, user: TEST_USER, identityFile: path.join(certs, 'id_cert'), targets: ['host'], runRoots: [host.paths.runs] },
      ],
      'remoteRuns.knownHostsFiles': [host.knownHostsFile, kh],
      'remoteRuns.useSshConfigHosts': false,
      'remoteRuns.refreshIntervalSeconds': 0,
    },
  });
});

after(async () => {
  await session?.close();
  await certOnly?.stop();
  await host?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

test("a certificate-only host is listed over OpenSSH and its tooltip says which transport and why; a plain host's says the built-in client", async () => {
  await withArtifactsOnFailure(session, 'transport-tooltip', async () => {
    await session.page.locator('.part.activitybar a.action-label[aria-label="Remote Runs"]').waitFor({ state: 'visible', timeout: 180_000 });
    await session.openViewContainer('Remote Runs');
    await treeRow(session, 'certbox').waitFor({ state: 'visible', timeout: 180_000 });
    await expandTreeRow(session, 'certbox');
    // Listed through the certificate: only OpenSSH could log in here.
    await expandTreeRow(session, 'host');
    await treeRow(session, 'story').waitFor({ state: 'visible', timeout: 60_000 });
    await expectRow(session, 'certbox', /connected/);
    const page = session.page;
    const certTip = page.locator('.monaco-hover, .workbench-hover', { hasText: 'Transport: OpenSSH' });
    await hoverUntil(page, treeRow(session, 'certbox'), certTip.first(), "certbox's tooltip");
    const text = await certTip.first().innerText();
    assert.match(text, new RegExp(`Transport: OpenSSH \\(${path.join(certs, 'id_cert-cert.pub').replace(/[.]/g, '\\.')} beside IdentityFile .*id_cert: ssh2 cannot use user certificates\\)`));
    await page.mouse.move(1, 1);
    const plainTip = page.locator('.monaco-hover, .workbench-hover', { hasText: 'Transport: built-in client (ssh2)' });
    await hoverUntil(page, treeRow(session, 'plainbox'), plainTip.first(), "plainbox's tooltip");
  });
});
