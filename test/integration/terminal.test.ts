/** "Open Terminal Here": the OpenSSH command line we build really lands inside the container, in the run's folder. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { terminalSshArgs } from '../../src/core/terminal';
import { resolveHost, parseSshConfig } from '../../src/core/ssh/sshConfig';
import { startTestHost, type TestHost } from '../harness/testHost';

let host: TestHost;
before(async () => {
  host = await startTestHost();
});
after(async () => {
  await host?.stop();
});

function shellIn(target: Parameters<typeof terminalSshArgs>[2], cwd: string, script: string): { code: number; out: string; err: string } {
  const resolved = resolveHost(host.hostConfig(), parseSshConfig('', { home: host.clientHome }), { home: host.clientHome, localUser: 'nobody' });
  const args = terminalSshArgs(resolved.jumps, resolved.target, target, cwd, { knownHostsFiles: [host.knownHostsFile] });
  // No terminal here: ssh falls back to no pty and the login shell reads the script from stdin.
  const r = spawnSync('ssh', ['-o', 'BatchMode=yes', '-F', '/dev/null', ...args], { input: script, encoding: 'utf8', timeout: 30_000 });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

test('a terminal on a pct container starts inside it, in the run folder', () => {
  const r = shellIn({ kind: 'pct', id: '200' }, '/workspace/checkpoints', 'pwd; ls; exit 0\n');
  assert.equal(r.code, 0, r.err);
  const lines = r.out.trim().split('\n');
  assert.ok(lines.includes('/workspace/checkpoints'), r.out);
  assert.ok(lines.includes(`step_${host.storySteps[0]}`), 'sees the container’s own /workspace');
});

test('a terminal on the bare host with a hostile run folder name lands in that folder', () => {
  const name = host.hostileNames.find((n) => n.includes('$('))!;
  const r = shellIn({ kind: 'host', id: '' }, `${host.paths.hostile}/${name}`, 'pwd; exit 0\n');
  assert.equal(r.code, 0, r.err);
  assert.ok(r.out.includes(`${host.paths.hostile}/${name}`), r.out);
});
