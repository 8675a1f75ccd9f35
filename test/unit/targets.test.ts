import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyTargetFailure, wrapForTarget } from '../../src/core/targets';
import { portableCommandLine } from '../../src/core/shell/portable';
import type { ExecResult } from '../../src/core/remote';

const result = (code: number, stderr: string): ExecResult => ({ stdout: Buffer.alloc(0), stderr: Buffer.from(stderr), code, truncated: false });

test('pct: a missing container is container-missing, a stopped one container-stopped (current and old texts)', () => {
  const pct = { kind: 'pct', id: '200' } as const;
  assert.equal(classifyTargetFailure(pct, result(255, "Configuration file 'nodes/pve/lxc/200.conf' does not exist\n"))?.kind, 'container-missing');
  assert.equal(classifyTargetFailure(pct, result(255, "container '200' not running!\n"))?.kind, 'container-stopped');
  assert.equal(classifyTargetFailure(pct, result(255, 'CT 200 not running\n'))?.kind, 'container-stopped');
});

test('docker: missing, stopped, paused and daemon refusals are told apart', () => {
  const d = { kind: 'docker', id: 'trainer' } as const;
  assert.equal(classifyTargetFailure(d, result(1, 'Error response from daemon: No such container: trainer\n'))?.kind, 'container-missing');
  assert.equal(classifyTargetFailure(d, result(1, 'Error response from daemon: container 3f2a9c is not running\n'))?.kind, 'container-stopped');
  assert.equal(classifyTargetFailure(d, result(1, 'Error response from daemon: container 3f2a9c is paused, unpause the container before exec\n'))?.kind, 'container-stopped');
  assert.equal(
    classifyTargetFailure(d, result(1, 'permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: Get …\n'))?.kind,
    'permission-denied',
  );
  const down = classifyTargetFailure(d, result(1, 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n'));
  assert.equal(down, undefined, 'a daemon that is down is the command failing, reported with its exit code and text');
});

test("the command's own failure is not mistaken for the runtime's", () => {
  const d = { kind: 'docker', id: 'trainer' } as const;
  assert.equal(classifyTargetFailure(d, result(2, 'ls: cannot access x: No such file or directory\n')), undefined);
  assert.equal(classifyTargetFailure({ kind: 'host', id: '' }, result(1, 'container 1 is not running')), undefined);
  assert.equal(classifyTargetFailure(d, result(0, 'Error response from daemon: No such container: trainer')), undefined);
});

test('a missing runtime is a command failure that names it', () => {
  const e = classifyTargetFailure({ kind: 'pct', id: '200' }, result(127, 'sh: 1: pct: not found\n'));
  assert.equal(e?.kind, 'command-failed');
  assert.match(e!.message, /pct is not installed/);
});

test('the argv is quoted once, after the target prefix, and sent through the one portable wrapper', () => {
  assert.equal(wrapForTarget({ kind: 'pct', id: '200' }, ['ls', '-la', 'a b']), portableCommandLine("pct exec 200 -- ls -la 'a b'"));
  assert.equal(wrapForTarget({ kind: 'docker', id: "we'ird" }, ['true']), portableCommandLine("docker exec -i 'we'\\''ird' true"));
  assert.equal(wrapForTarget({ kind: 'host', id: '' }, ['echo', '$(id)']), portableCommandLine("echo '$(id)'"));
  assert.equal(wrapForTarget({ kind: 'host', id: '' }, ['cat'], false), portableCommandLine('cat', false));
});
