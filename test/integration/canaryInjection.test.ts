/**
 * Command-injection canary (issue 8), on the real sshd and through the pct/docker shims: every value that is
 * templated or comes from the remote side and reaches a shell (run roots, run folder names, checkpoint and file
 * names, metrics log paths, container ids and names, eval template variables, cwd and env, the terminal's folder,
 * download paths) is tried with `;`, `&&`, `||`, `|`, `$()`, backticks, both quotes, newlines and redirection,
 * each trying to create a canary file. The canary must never appear; a control run of the same payload
 * unquoted proves the detector sees one when it does.
 *
 * Payloads `cd` to $HOME first, so they would land in a writable place in every context (a container's cwd is
 * its `/`, which the login user cannot write); values that may hold `/` also try an absolute path in a
 * world-writable folder. Detection looks in both, and in the test host's folder (the runs' own cwd).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { HostDirectory } from '../../src/core/hosts';
import { RemoteRunsCore, runsOf } from '../../src/core/service';
import { runCommand } from '../../src/core/remote';
import { nextTailRequest, tailReadCommand } from '../../src/core/metrics';
import { download, planDownload } from '../../src/core/transfer';
import { terminalSshArgs } from '../../src/core/terminal';
import { parseSshConfig, resolveHost } from '../../src/core/ssh/sshConfig';
import { EvalService } from '../../src/core/eval/service';
import { parseEvalProfile } from '../../src/core/eval/profiles';
import { RemoteRunsError, evalStep, type HostConfig, type Run, type TargetRef } from '../../src/core/types';
import { addDockerContainer } from '../shims/shimState';
import { TEST_USER, ensureTestUser } from '../harness/sshd';
import { startTestHost, type TestHost } from '../harness/testHost';
import { testPool } from '../builders/pool';

const HOST: TargetRef = { kind: 'host', id: '' };
const TOKEN = randomBytes(4).toString('hex');
/** World-writable, visible on the host and inside the shim containers (they only replace /workspace). */
const DROP = path.join(os.tmpdir(), `rrcanary-${TOKEN}`);
const userHome = ensureTestUser().home;

let host: TestHost;
let pool: ConnectionPool;
let core: RemoteRunsCore;
let hosts: HostConfig[];
let directory: HostDirectory;
let runsRoot: string;
let localRoot: string;

/** Payloads for a value that cannot hold `/` (a folder or file name): each touches `$HOME/<name>`. */
function namePayloads(surface: string): string[] {
  // `~user`, not `cd` alone: docker exec sets HOME=/root, which the login user cannot write.
  const c = (i: number): string => `cd ~${TEST_USER};touch rrcanary-${TOKEN}-${surface}-${i}`;
  return [
    `;${c(0)};`,
    `&&${c(1)}&&`,
    `||${c(2)}||x`,
    `|sh -c 'cd ~${TEST_USER};touch rrcanary-${TOKEN}-${surface}-3'|`,
    `$(${c(4)})`,
    `\`${c(5)}\``,
    `';${c(6)};'`,
    `";${c(7)};"`,
    `\n${c(8)}\n`,
    `\\';${c(9)};#`,
    `$(cd ~${TEST_USER};IFS=_;cmd=touch_rrcanary-${TOKEN}-${surface}-10;$cmd)`,
    `'"$(${c(11)})"'`,
  ];
}

/** Payloads for a value that may hold `/` (paths, ids, template values): absolute canaries too. */
function pathPayloads(surface: string): string[] {
  const t = (i: number): string => `touch ${DROP}/${surface}-${i}`;
  return [...namePayloads(surface), `;${t(20)}`, `$(${t(21)})`, `\`${t(22)}\``, `>${DROP}/${surface}-23`, `x\n${t(24)}`, `-exec touch ${DROP}/${surface}-25 ;`];
}

/** Canary files present now: in $HOME of the login user, the drop folder, the test host's folder, and cwd-like places. */
function canaries(): string[] {
  const found: string[] = [];
  const look = (dir: string, depth: number, name: string): void => {
    if (!fs.existsSync(dir)) return;
    const out = execFileSync('find', [dir, '-xdev', '-mindepth', '1', '-maxdepth', String(depth), '-name', name, '-print0'], { encoding: 'utf8' });
    found.push(...out.split('\0').filter((l) => l));
  };
  const name = `rrcanary-${TOKEN}-*`;
  look(userHome, 1, name);
  look(DROP, 1, '*');
  look(host.dir, 12, name);
  for (const d of ['/', '/root', '/workspace', os.tmpdir(), process.cwd()]) look(d, 1, name);
  return found;
}

function assertNoCanary(what: string): void {
  const found = canaries();
  assert.deepEqual(found, [], `${what}: an injected command ran and created ${found.join(', ')}`);
}

function makeEvals(): EvalService {
  return new EvalService({
    executorFor: (name, { idempotent }) => pool.executor(directory.resolve(hosts.find((h) => h.name === name)!), { idempotent }),
    localStateDir: fs.mkdtempSync(path.join(os.tmpdir(), 'rr-canary-evals-')),
  });
}

/** A running docker (shim) container named `name`, holding one run `r` in /workspace. */
function hostileContainer(name: string): void {
  const c = addDockerContainer(host.shimRoot, name, { state: 'running' });
  fs.mkdirSync(path.join(c.workspace, 'r', 'checkpoints', 'step_1'), { recursive: true });
  fs.writeFileSync(path.join(c.workspace, 'r', 'checkpoints', 'step_1', 'm.pt'), 'm');
  execFileSync('chmod', ['-R', 'a+rX', c.workspace]);
}

async function listRuns(target: TargetRef, roots: string[]): Promise<Run[]> {
  hosts[0] = host.hostConfig('box', { runRoots: roots });
  return runsOf(await core.listTarget('box', target));
}

before(async () => {
  host = await startTestHost();
  fs.mkdirSync(DROP, { mode: 0o1777 });
  fs.chmodSync(DROP, 0o1777);
  hosts = [host.hostConfig('box')];
  pool = testPool(host, { connectTimeoutMs: 10_000 });
  directory = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  core = new RemoteRunsCore({ hosts: () => hosts, executorFor: (h) => pool.executor(directory.resolve(h), { idempotent: true }) });
  // One run per payload, named with it; inside, a checkpoint folder holding a file named with it, and a metrics
  // log named with it. Owned by the login user, so evals can write their folder into the run.
  runsRoot = path.join(host.dir, 'canary-runs');
  for (const [i, p] of namePayloads('run').entries()) {
    const run = path.join(runsRoot, p);
    const file = namePayloads('file')[i];
    fs.mkdirSync(path.join(run, 'checkpoints', 'step_5'), { recursive: true });
    fs.writeFileSync(path.join(run, 'checkpoints', 'step_5', `${file}.bin`), `weights ${i}`);
    fs.mkdirSync(path.join(run, 'logs'));
    fs.writeFileSync(path.join(run, 'logs', `${namePayloads('log')[i]}.jsonl`), `{"step": 5, "loss": ${i}}\n`);
  }
  execFileSync('chown', ['-R', `${TEST_USER}:${TEST_USER}`, runsRoot]);
  execFileSync('chmod', ['-R', 'a+rX', runsRoot]);
  localRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-canary-local-'));
});

after(async () => {
  pool?.dispose();
  await host?.stop();
  fs.rmSync(DROP, { recursive: true, force: true });
  for (const f of fs.readdirSync(userHome)) if (f.includes(TOKEN)) fs.rmSync(path.join(userHome, f), { force: true });
  if (localRoot) fs.rmSync(localRoot, { recursive: true, force: true });
});

test('control: the same payload run unquoted creates the canary, and the detector sees it (host and container)', async () => {
  const executor = pool.executor(directory.resolve(host.hostConfig('box')), { idempotent: true });
  await executor.exec(`echo x${namePayloads('control')[0]}`);
  await runCommand(executor, { kind: 'docker', id: 'trainer' }, { argv: ['sh', '-c', `echo x${namePayloads('control-docker')[4]}`], describe: 'control', parse: () => undefined });
  await executor.exec(`echo x${pathPayloads('control')[12]}`);
  const found = canaries();
  for (const f of found) fs.rmSync(f);
  assert.deepEqual(found.map((f) => path.basename(f)).sort(), [`control-20`, `rrcanary-${TOKEN}-control-0`, `rrcanary-${TOKEN}-control-docker-4`].sort());
  assertNoCanary('after cleaning the control');
});

describe('listing', () => {
  test('run roots made of payloads (bare host and ~/...): each is reported missing, nothing runs', async () => {
    const roots = [...pathPayloads('root').map((p) => `/nonexistent/${p}`), ...pathPayloads('home').map((p) => `~/${p}`)];
    hosts[0] = host.hostConfig('box', { runRoots: roots });
    const listing = await core.listTarget('box', HOST);
    assert.equal(listing.roots.length, roots.length);
    for (const r of listing.roots) assert.equal(r.state, 'path-missing', `${JSON.stringify(r.root)}: ${r.state}`);
    assertNoCanary('run roots');
  });

  test('run folders named with payloads are listed by their exact names, with their checkpoints and logs', async () => {
    const runs = await listRuns(HOST, [runsRoot]);
    assert.deepEqual(runs.map((r) => r.name).sort(), namePayloads('run').sort());
    for (const r of runs) {
      assert.equal(r.checkpoints.length, 1);
      assert.equal(r.metrics.length, 1);
    }
    assertNoCanary('listing hostile folders');
  });

  test('container ids and names made of payloads (docker and pct): container-missing or a listing, nothing runs', async () => {
    for (const p of pathPayloads('ctid')) {
      for (const target of [{ kind: 'docker', id: p }, { kind: 'pct', id: p }] as TargetRef[]) {
        try {
          await listRuns(target, ['/workspace']);
        } catch (e) {
          assert.ok(e instanceof RemoteRunsError, String(e));
          assert.ok(['container-missing', 'command-failed', 'bad-address'].includes(e.kind), `${target.kind} ${JSON.stringify(p)}: ${e.kind} ${e.message}`);
        }
      }
    }
    // Containers that exist under hostile names (the docker shim allows any name without "/" or a newline; real
    // docker allows none of these characters, so this only proves our side quotes).
    for (const p of namePayloads('ctname').filter((n) => !n.includes('\n'))) {
      hostileContainer(p);
      const runs = await listRuns({ kind: 'docker', id: p }, ['/workspace']);
      assert.deepEqual(runs.map((r) => r.name), ['r'], `container ${JSON.stringify(p)}`);
    }
    assertNoCanary('container ids');
  });
});

describe('reading and downloading', () => {
  test('metrics logs with payload names and paths are tailed byte-exact', async () => {
    const executor = pool.executor(directory.resolve(host.hostConfig('box')), { idempotent: true });
    const runs = await listRuns(HOST, [runsRoot]);
    for (const r of runs) {
      const read = await runCommand(executor, HOST, tailReadCommand(r.metrics[0], nextTailRequest(undefined, 'append')));
      assert.equal(read.status, 'ok', r.metrics[0]);
      assert.equal(read.status === 'ok' ? Buffer.from(read.data).toString() : '', fs.readFileSync(r.metrics[0], 'utf8'));
    }
    for (const p of pathPayloads('tail')) {
      const read = await runCommand(executor, HOST, tailReadCommand(`/nonexistent/${p}`, nextTailRequest(undefined, 'append')));
      assert.equal(read.status, 'missing');
    }
    assertNoCanary('metrics tail');
  });

  test('checkpoints whose run, folder and file names are payloads download byte-exact to the same names locally', async () => {
    const runs = await listRuns(HOST, [runsRoot]);
    const source = { pool, host: directory.resolve(host.hostConfig('box')), target: HOST };
    for (const r of runs) {
      const ck = r.checkpoints[0];
      const plan = await planDownload(source, ck, { root: localRoot, run: r.name });
      await download(plan, { concurrency: 2 });
      const remoteFile = fs.readdirSync(ck.path)[0];
      assert.equal(fs.readFileSync(path.join(localRoot, r.name, ck.name, remoteFile), 'utf8'), fs.readFileSync(path.join(ck.path, remoteFile), 'utf8'));
    }
    assertNoCanary('downloads');
  });
});

describe('evals and terminals', () => {
  test('eval template variables, cwd and env carrying payloads reach the eval as exact values', { timeout: 300_000 }, async () => {
    const evals = makeEvals();
    const runs = await listRuns(HOST, [runsRoot]);
    const profile = parseEvalProfile({
      name: 'canary',
      command: `printf '<%s>\\n' \${checkpoint} \${run} \${runPath} \${step} "$PWD" "$EVAL_RUN"`,
      cwd: '${runPath}',
      env: { EVAL_RUN: '${run}' },
    });
    for (const r of runs) {
      const ck = r.checkpoints[0];
      const started = await evals.start(profile, { host: 'box', target: HOST, run: { name: r.name, path: r.path }, checkpoint: { path: ck.path, step: evalStep(ck) } });
      const end = await evals.follow(started.place, started.id, started.meta, { pollMs: 100 });
      assert.equal(end.state, "passed", r.name);
      const log = fs.readFileSync(path.join(r.path, '.remote-runs', 'evals', started.id, 'log'), 'utf8');
      assert.equal(log, [ck.path, r.name, r.path, String(ck.step), r.path, r.name].map((v) => `<${v}>\n`).join(''));
    }
    assertNoCanary('evals');
  });

  test('"Open Terminal Here" in payload-named folders, on the host and in a payload-named container, lands in the folder', () => {
    const resolved = resolveHost(host.hostConfig(), parseSshConfig('', { home: host.clientHome }), { home: host.clientHome, localUser: 'nobody' });
    const shellIn = (target: TargetRef, cwd: string): string => {
      const args = terminalSshArgs(resolved.jumps, resolved.target, target, cwd, { knownHostsFiles: [host.knownHostsFile] });
      const r = spawnSync('ssh', ['-o', 'BatchMode=yes', '-F', '/dev/null', ...args], { input: 'printf "%s" "$PWD"; exit 0\n', encoding: 'utf8', timeout: 60_000 });
      assert.equal(r.status, 0, `${target.kind}:${target.id} in ${JSON.stringify(cwd)}: ${r.stderr}`);
      return r.stdout;
    };
    for (const p of namePayloads('run')) assert.equal(shellIn(HOST, path.join(runsRoot, p)), path.join(runsRoot, p));
    // A folder that does not exist (with a payload in it) leaves the shell in $HOME, and runs nothing.
    for (const p of pathPayloads('cwd').slice(12)) shellIn(HOST, `/nonexistent/${p}`);
    const named = namePayloads('ctname')[0];
    hostileContainer(named);
    assert.equal(shellIn({ kind: 'docker', id: named }, '/workspace/r'), '/workspace/r');
    assertNoCanary('terminals');
  });
});
