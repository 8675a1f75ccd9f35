/**
 * The TEST shims `pct` and `docker` run directly (and through runCommand with a local sh standing in for sshd's
 * login shell): each container sees its own /workspace, argv passes through verbatim, exit codes pass through,
 * and missing or stopped containers fail with the real tools' text and exit code.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCommand, type Executor, type ExecResult } from '../../src/core/remote';
import { classifyTargetFailure } from '../../src/core/targets';
import { listRunsCommand } from '../../src/core/discovery/listScript';
import { RemoteRunsError, type TargetRef } from '../../src/core/types';
import { HOSTILE_NAMES, writeHostileNames, writeStoryRun } from '../fixtures/generate';
import { addDockerContainer, addPctContainer, createShimRoot, installShims, setContainerState, type ShimContainer } from '../shims/shimState';

let tmp: string;
let state: string;
let bin: string;
let shims: { pct: string; docker: string };
let ct200: ShimContainer;
let trainer: ShimContainer;

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-shims-'));
  fs.chmodSync(tmp, 0o755); // one test runs the shims as an unprivileged user
  state = createShimRoot(path.join(tmp, 'state'), { node: 'pve1' });
  bin = path.join(tmp, 'bin');
  shims = installShims(bin, state);
  ct200 = addPctContainer(state, 200, { name: 'kpro6-train' });
  writeStoryRun(ct200.workspace, { checkpointBytes: 3 * 1024 ** 3 });
  const ct201 = addPctContainer(state, 201, { name: 'other', state: 'stopped' });
  fs.writeFileSync(path.join(ct201.workspace, 'ONLY_IN_201'), '');
  trainer = addDockerContainer(state, 'trainer');
  writeHostileNames(trainer.workspace);
  addDockerContainer(state, 'eval-old', { state: 'exited' });
  addDockerContainer(state, 'frozen', { state: 'paused' });
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Run a shim directly; the state root comes from bin/shim-root, as over ssh where our env is not passed. */
function run(tool: string, args: string[], input?: string): SpawnSyncReturns<string> {
  return spawnSync(tool, args, { encoding: 'utf8', input, env: { PATH: '/usr/bin:/bin', HOME: tmp }, cwd: tmp });
}

test('pct exec runs in the container: its /workspace, argv verbatim, exit code passed through', () => {
  const ls = run(shims.pct, ['exec', '200', '--', 'ls', '/workspace']);
  assert.equal(ls.status, 0, ls.stderr);
  assert.deepEqual(ls.stdout.trim().split('\n'), ['checkpoints', 'logs']);
  const steps = run(shims.pct, ['exec', '200', '--', 'ls', '/workspace/checkpoints']);
  assert.deepEqual(steps.stdout.trim().split('\n'), ['step_10000', 'step_12000', 'step_14000', 'step_16000', 'step_18000', 'step_20000', 'step_22000']);
  const args = ['a b', "it's", '$(touch CANARY)', '`touch CANARY`', 'new\nline', ''];
  const echo = run(shims.pct, ['exec', '200', '--', 'printf', '[%s]', ...args]);
  assert.equal(echo.stdout, args.map((a) => `[${a}]`).join(''));
  assert.equal(fs.existsSync(path.join(tmp, 'CANARY')), false);
  assert.equal(run(shims.pct, ['exec', '200', '--', 'sh', '-c', 'exit 42']).status, 42);
  assert.equal(run(shims.pct, ['exec', '200', '--', 'cat'], 'from stdin').stdout, 'from stdin');
});

test('pct: a missing container and a stopped one fail with Proxmox\'s own text and exit code', () => {
  const missing = run(shims.pct, ['exec', '999', '--', 'ls']);
  assert.equal(missing.status, 255);
  assert.equal(missing.stderr, "Configuration file 'nodes/pve1/lxc/999.conf' does not exist\n");
  const stopped = run(shims.pct, ['exec', '201', '--', 'ls', '/workspace']);
  assert.equal(stopped.status, 255);
  assert.equal(stopped.stderr, "container '201' not running!\n");
  assert.equal(stopped.stdout, '');
  assert.equal(run(shims.pct, ['status', '201']).stdout, 'status: stopped\n');
  assert.equal(run(shims.pct, ['status', '999']).status, 255);
  const list = run(shims.pct, ['list']);
  assert.equal(list.stdout, [
    'VMID       Status     Lock         Name                ',
    '200        running                 kpro6-train         ',
    '201        stopped                 other               ',
    '',
  ].join('\n'));
});

test('docker exec: its own /workspace; missing, stopped and paused containers fail as docker does', () => {
  const ls = run(shims.docker, ['exec', '-i', 'trainer', 'ls', '/workspace']);
  assert.equal(ls.status, 0, ls.stderr);
  assert.equal(ls.stdout.includes('run with spaces\n'), true);
  assert.equal(run(shims.docker, ['exec', 'trainer', 'sh', '-c', 'exit 3']).status, 3);
  const missing = run(shims.docker, ['exec', '-i', 'nope', 'ls']);
  assert.equal(missing.status, 1);
  assert.equal(missing.stderr, 'Error response from daemon: No such container: nope\n');
  const stopped = run(shims.docker, ['exec', '-i', 'eval-old', 'ls']);
  assert.equal(stopped.status, 1);
  assert.match(stopped.stderr, /^Error response from daemon: container [0-9a-f]{64} is not running\n$/);
  const paused = run(shims.docker, ['exec', 'frozen', 'ls']);
  assert.match(paused.stderr, /^Error response from daemon: container [0-9a-f]{64} is paused, unpause the container before exec\n$/);
  const ps = run(shims.docker, ['ps', '-a', '--format', '{{.Names}}\\t{{.State}}']);
  assert.equal(ps.stdout, 'eval-old\texited\nfrozen\tpaused\ntrainer\trunning\n');
});

test('the runtime errors the shims print are the ones targets.ts recognises', () => {
  const asResult = (r: SpawnSyncReturns<string>): ExecResult => ({ stdout: Buffer.from(r.stdout), stderr: Buffer.from(r.stderr), code: r.status, truncated: false });
  const kind = (target: TargetRef, r: SpawnSyncReturns<string>) => classifyTargetFailure(target, asResult(r))?.kind;
  assert.equal(kind({ kind: 'pct', id: '999' }, run(shims.pct, ['exec', '999', '--', 'ls'])), 'container-missing');
  assert.equal(kind({ kind: 'docker', id: 'nope' }, run(shims.docker, ['exec', '-i', 'nope', 'ls'])), 'container-missing');
  assert.equal(kind({ kind: 'docker', id: 'eval-old' }, run(shims.docker, ['exec', '-i', 'eval-old', 'ls'])), 'container-stopped');
  // The command's own failure inside a running container is not the runtime's.
  assert.equal(kind({ kind: 'pct', id: '200' }, run(shims.pct, ['exec', '200', '--', 'ls', '/workspace/nothing'])), undefined);
});

/** sshd's part played by a local sh: the runner's one quoted command line, with the shims on PATH. */
const localExecutor: Executor = {
  async exec(commandLine, options) {
    const r = spawnSync('/bin/sh', ['-c', commandLine], { input: options?.stdin, env: { PATH: `${bin}:/usr/bin:/bin`, HOME: tmp }, cwd: tmp, maxBuffer: 64 * 1024 * 1024 });
    return { stdout: r.stdout, stderr: r.stderr, code: r.status, signal: r.signal ?? undefined, truncated: false };
  },
};

test('the list script through runCommand and pct exec finds the story run inside container 200', async () => {
  const out = await runCommand(localExecutor, { kind: 'pct', id: '200' }, listRunsCommand(['/workspace', '/nonexistent']));
  const [ws, missing] = out.roots;
  assert.equal(ws.state, 'ok');
  const runs = ws.state === 'ok' ? ws.runs : [];
  assert.deepEqual(runs.map((r) => [r.name, r.path, r.checkpoints.length]), [['workspace', '/workspace', 7]]);
  assert.equal(runs[0].checkpoints[6].path, '/workspace/checkpoints/step_22000');
  assert.equal(runs[0].checkpoints[6].bytes, 3 * 1024 ** 3);
  assert.equal(missing.state, 'path-missing');
});

test('the list script through docker exec lists hostile names exactly, and runs none of them', async () => {
  const out = await runCommand(localExecutor, { kind: 'docker', id: 'trainer' }, listRunsCommand(['/workspace']));
  const runs = out.roots[0].state === 'ok' ? out.roots[0].runs : [];
  assert.deepEqual(runs.map((r) => r.name).sort(), [...HOSTILE_NAMES].sort());
  assert.equal(fs.existsSync(path.join(trainer.workspace, 'CANARY')), false);
  assert.equal(fs.existsSync(path.join(tmp, 'CANARY')), false);
});

test('through runCommand a missing container is container-missing, not an empty listing', async () => {
  await assert.rejects(
    runCommand(localExecutor, { kind: 'pct', id: '999' }, listRunsCommand(['/workspace'])),
    (e: unknown) => e instanceof RemoteRunsError && e.kind === 'container-missing',
  );
  await assert.rejects(
    runCommand(localExecutor, { kind: 'docker', id: 'eval-old' }, listRunsCommand(['/workspace'])),
    (e: unknown) => e instanceof RemoteRunsError && e.kind === 'container-stopped',
  );
});

test('a rootfs folder the host already has is bind-mounted over it (the fast path), start/stop change state', () => {
  const ct = addPctContainer(state, 300, { name: 'mnt-test' });
  fs.mkdirSync(path.join(ct.rootfs, 'mnt', 'data'), { recursive: true });
  fs.rmSync(ct.workspace, { recursive: true }); // only /mnt: the host has /mnt, so no chroot is needed
  const ls = run(shims.pct, ['exec', '300', '--', 'ls', '/mnt']);
  assert.equal(ls.stdout, 'data\n', ls.stderr);
  assert.equal(run(shims.pct, ['stop', '300']).status, 0);
  assert.equal(run(shims.pct, ['exec', '300', '--', 'true']).stderr, "container '300' not running!\n");
  setContainerState(ct, 'running');
  assert.equal(run(shims.pct, ['exec', '300', '--', 'true']).status, 0);
});

test('an unprivileged user gets the same view (unshare -rm needs no root)', () => {
  const drop = process.getuid?.() === 0 ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [];
  const argv = [...drop, shims.pct, 'exec', '200', '--', 'ls', '/workspace/checkpoints'];
  const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', HOME: '/' }, cwd: '/' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim().split('\n').length, 7);
});
