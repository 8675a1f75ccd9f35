import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  discoverTargetsCommand,
  parseDockerPs,
  parsePctList,
  parseTargetsOutput,
  type DiscoveredTargets,
} from '../../src/core/discovery/targetsDiscovery';
import { RemoteRunsError } from '../../src/core/types';
import { addDockerContainer, addPctContainer, createShimRoot, installShims, setDockerDaemon } from '../shims/shimState';

// `pct list` as Proxmox VE prints it: printf("%-10s %-10s %-12s %-20s\n") per row (pve-container pct.pm),
// trailing padding included, the Lock column blank unless a lock is held.
const PCT_LIST = [
  'VMID       Status     Lock         Name                ',
  '129        running                 sglang-a6000        ',
  '200        running                 kpro6-train         ',
  '201        stopped    backup       old-eval            ',
  '202        stopped    snapshot-delete scratch             ',
  '305        running                                     ',
  '',
].join('\n');

test('pct list: columns by header position, blank and overflowing locks, a missing name', () => {
  assert.deepEqual(parsePctList(PCT_LIST), [
    { kind: 'pct', id: '129', state: 'running', label: 'sglang-a6000' },
    { kind: 'pct', id: '200', state: 'running', label: 'kpro6-train' },
    { kind: 'pct', id: '201', state: 'stopped', label: 'old-eval' },
    { kind: 'pct', id: '202', state: 'stopped', label: 'scratch' },
    { kind: 'pct', id: '305', state: 'running', label: '305' },
  ]);
  assert.deepEqual(parsePctList(''), [], 'pct list prints nothing at all when there are no containers');
});

test('docker ps: every state docker reports maps to running or stopped', () => {
  const out = [
    'trainer\trunning\tUp 3 hours',
    'eval\texited\tExited (0) 2 days ago',
    'fresh\tcreated\tCreated',
    'frozen\tpaused\tUp 5 minutes (Paused)',
    'crashy\trestarting\tRestarting (1) 4 seconds ago',
    'zombie\tdead\tDead',
    'web,app/db\trunning\tUp 1 second',
    'old-cli\t\tUp 2 weeks',
    '',
  ].join('\n');
  assert.deepEqual(
    parseDockerPs(out).map((t) => [t.id, t.state]),
    [
      ['trainer', 'running'],
      ['eval', 'stopped'],
      ['fresh', 'stopped'],
      ['frozen', 'stopped'],
      ['crashy', 'unknown'],
      ['zombie', 'stopped'],
      ['web', 'running'],
      ['old-cli', 'running'],
    ],
  );
});

function sectioned(parts: string): Buffer {
  return Buffer.from(`@@remote-runs@@ begin\n${parts}@@remote-runs@@ end\n`);
}

test('one runtime failing becomes a problem with its own text; the other still lists', () => {
  const stdout = sectioned(
    `\n@@remote-runs@@ pct out\n${PCT_LIST}\n@@remote-runs@@ pct err\n\n@@remote-runs@@ pct rc 0\n` +
      '\n@@remote-runs@@ docker out\n\n@@remote-runs@@ docker err\n' +
      'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n' +
      '@@remote-runs@@ docker rc 1\n',
  );
  const found = parseTargetsOutput({ stdout, stderr: Buffer.alloc(0), code: 0, truncated: false });
  assert.equal(found.hasPct, true);
  assert.equal(found.hasDocker, true);
  assert.deepEqual(found.targets[0], { kind: 'host', id: '', state: 'running', label: 'host' });
  assert.equal(found.targets.filter((t) => t.kind === 'pct').length, 5);
  assert.deepEqual(found.problems, [
    'docker ps failed (exit code 1): Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?',
  ]);
});

test('output that is not ours is a protocol error; a failed script is command-failed', () => {
  const parse = discoverTargetsCommand().parse;
  assert.throws(() => parse({ stdout: Buffer.from('hello\n'), stderr: Buffer.alloc(0), code: 0, truncated: false }), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'protocol');
  assert.throws(() => parse({ stdout: Buffer.alloc(0), stderr: Buffer.from('sh: not found'), code: 127, truncated: false }), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'command-failed');
});

// The real script, run by /bin/sh with the test shims standing in for pct and docker.
let tmp: string;
let bin: string;
let state: string;

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-targets-'));
  state = createShimRoot(path.join(tmp, 'state'), { node: 'pve1' });
  bin = path.join(tmp, 'bin');
  installShims(bin, state);
  addPctContainer(state, 200, { name: 'kpro6-train' });
  addPctContainer(state, 129, { name: 'sglang', state: 'stopped' });
  addDockerContainer(state, 'trainer');
  addDockerContainer(state, 'eval-old', { state: 'exited' });
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function discover(pathEnv: string): DiscoveredTargets {
  const cmd = discoverTargetsCommand();
  const env = { PATH: pathEnv, HOME: tmp };
  const r = spawnSync(cmd.argv[0], cmd.argv.slice(1), { env });
  return cmd.parse({ stdout: r.stdout, stderr: r.stderr, code: r.status, truncated: false });
}

test('the script finds pct and docker containers through the shims', () => {
  const found = discover(`${bin}:/usr/bin:/bin`);
  assert.equal(found.hasPct, true);
  assert.equal(found.hasDocker, true);
  assert.deepEqual(found.problems, []);
  assert.deepEqual(found.targets, [
    { kind: 'host', id: '', state: 'running', label: 'host' },
    { kind: 'pct', id: '129', state: 'stopped', label: 'sglang' },
    { kind: 'pct', id: '200', state: 'running', label: 'kpro6-train' },
    { kind: 'docker', id: 'eval-old', state: 'stopped', label: 'eval-old' },
    { kind: 'docker', id: 'trainer', state: 'running', label: 'trainer' },
  ]);
});

test('a docker socket that refuses this user is a problem, not an error, and pct still lists', () => {
  setDockerDaemon(state, 'denied');
  try {
    const found = discover(`${bin}:/usr/bin:/bin`);
    assert.equal(found.targets.filter((t) => t.kind === 'pct').length, 2);
    assert.equal(found.targets.filter((t) => t.kind === 'docker').length, 0);
    assert.equal(found.problems.length, 1);
    assert.match(found.problems[0], /^docker ps failed \(exit code 1\): permission denied while trying to connect to the Docker daemon socket/);
  } finally {
    setDockerDaemon(state, 'up');
  }
});

test('a host without pct or docker has just the bare host', () => {
  const empty = path.join(tmp, 'empty-bin');
  fs.mkdirSync(empty, { recursive: true });
  // Only sh and the coreutils the script needs; no pct, no docker.
  for (const tool of ['sh', 'printf']) {
    const where = ['/bin', '/usr/bin'].map((d) => path.join(d, tool)).find((p) => fs.existsSync(p));
    if (where) fs.symlinkSync(where, path.join(empty, tool));
  }
  const cmd = discoverTargetsCommand();
  const r = spawnSync('/bin/sh', cmd.argv.slice(1), { env: { PATH: empty } });
  const found = cmd.parse({ stdout: r.stdout, stderr: r.stderr, code: r.status, truncated: false });
  assert.deepEqual(found, { hasPct: false, hasDocker: false, targets: [{ kind: 'host', id: '', state: 'running', label: 'host' }], problems: [] });
});
