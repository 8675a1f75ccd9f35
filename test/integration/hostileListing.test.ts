/**
 * Hostile folders on a real OpenSSH host (issue 8): names made of every byte but NUL and `/`, names of 255 bytes,
 * 100,000 entries in one directory, symlink loops, subfolders the login user cannot read. The listing shows
 * what it can, says what it cannot (in the core's result and in the CLI's words), and finishes. The login user
 * is the harness's unprivileged `rrtest`, so permission errors are real although the tests run as root.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ensureBuiltCli, runBuiltCli } from '../harness/builtCli';

import { HostDirectory } from '../../src/core/hosts';
import { RemoteRunsCore, runsOf } from '../../src/core/service';
import type { HostConfig, RootListing, TargetListing } from '../../src/core/types';
import { startTestHost, type TestHost } from '../harness/testHost';
import { writeStoryRun, writeSymlinkLoop, writeManyFiles } from '../fixtures/generate';
import { testPool } from '../builders/pool';

const HOST = { kind: 'host' as const, id: '' };
let host: TestHost;
const roots = { bytes: '', long: '', many: '', loop: '', partial: '' };

/** Every byte value but NUL and `/`, in chunks of 32: eight folder names, each a run. */
const ALL_BYTES = Buffer.from(Array.from({ length: 255 }, (_, i) => i + 1).filter((b) => b !== 0x2f));
const CHUNKS: Buffer[] = [];
for (let i = 0; i < ALL_BYTES.length; i += 32) CHUNKS.push(ALL_BYTES.subarray(i, i + 32));
const LONG_NAMES = ['r'.repeat(255), 'é'.repeat(127) + 'x', '训'.repeat(85)];

function makeCore(hosts: HostConfig[]) {
  const pool = testPool(host, { connectTimeoutMs: 10_000 });
  const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  return { core: new RemoteRunsCore({ hosts: () => hosts, executorFor: (h) => pool.executor(dir.resolve(h), { idempotent: true }) }), pool };
}

async function list(root: string): Promise<{ listing: TargetListing; root: RootListing; logins: number }> {
  const { core, pool } = makeCore([host.hostConfig('box', { runRoots: [root], targets: ['host'] })]);
  const before = host.sshd.acceptedLogins();
  try {
    const listing = await core.listTarget('box', HOST);
    return { listing, root: listing.roots[0], logins: host.sshd.acceptedLogins() - before };
  } finally {
    pool.dispose();
  }
}

function cliLs(root: string, json: boolean): { code: number; stdout: string; stderr: string } {
  const config = path.join(host.dir, `cli-${path.basename(root)}.json`);
  fs.writeFileSync(config, JSON.stringify({ hosts: [host.hostConfig('box', { runRoots: [root], targets: ['host'] })] }));
  return runBuiltCli(['ls', 'box/host', ...(json ? ['--json'] : []), '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
}

before(async () => {
  ensureBuiltCli();
  host = await startTestHost();
  for (const k of Object.keys(roots) as (keyof typeof roots)[]) {
    roots[k] = path.join(host.dir, `hostile-${k}`);
    fs.mkdirSync(roots[k], { mode: 0o755 });
  }
  for (const chunk of CHUNKS) {
    const run = Buffer.concat([Buffer.from(`${roots.bytes}/`), chunk]);
    fs.mkdirSync(Buffer.concat([run, Buffer.from('/checkpoints/step_7')]), { recursive: true });
    fs.writeFileSync(Buffer.concat([run, Buffer.from('/checkpoints/step_7/checkpoint.pt')]), 'x'.repeat(70));
  }
  for (const name of LONG_NAMES) {
    assert.equal(Buffer.byteLength(name), 255);
    writeStoryRun(path.join(roots.long, name), { firstStep: 100, lastStep: 200, every: 100, checkpointBytes: 10 });
    // A checkpoint folder and a flat checkpoint file whose names are 255 bytes too.
    fs.mkdirSync(path.join(roots.long, name, 'checkpoints', `step_${'0'.repeat(249)}1`));
    fs.writeFileSync(path.join(roots.long, name, 'checkpoints', `step_${'0'.repeat(249)}1`, 'w.pt'), 'w');
    fs.writeFileSync(path.join(roots.long, name, `model_step_300_${'z'.repeat(255 - 'model_step_300_.pt'.length)}.pt`), 'flat');
  }
  writeStoryRun(path.join(roots.many, 'run_a'), { firstStep: 100, lastStep: 200, every: 100, checkpointBytes: 10 });
  writeManyFiles(roots.many, 100_000);
  writeSymlinkLoop(roots.loop);
  writeStoryRun(path.join(roots.partial, 'open-run'), { firstStep: 100, lastStep: 200, every: 100, checkpointBytes: 10 });
  writeStoryRun(path.join(roots.partial, 'locked', 'secret-run'), { firstStep: 100, lastStep: 200, every: 100, checkpointBytes: 10 });
  execFileSync('chmod', ['-R', 'a+rX', ...Object.values(roots)]);
  fs.chmodSync(path.join(roots.partial, 'locked'), 0o700); // root's, and the login user is rrtest
});
after(async () => {
  await host?.stop();
});

describe('names', () => {
  test('every byte but NUL and "/": each folder is its own run, ASCII names exact, bytes that are not UTF-8 kept as surrogateescape', { timeout: 120_000 }, async () => {
    const { root } = await list(roots.bytes);
    assert.equal(root.state, 'ok');
    const runs = root.state === 'ok' ? root.runs : [];
    // Bytes 0x80-0xFF in rising order never form UTF-8 sequences: each is the lone surrogate U+DC00 + byte (PEP 383's
    // surrogateescape, listParse.ts decodeName), which the display function shows `\xNN`.
    const shown = (chunk: Buffer): string => [...chunk].map((b) => String.fromCharCode(b < 0x80 ? b : 0xdc00 + b)).join('');
    assert.deepEqual(runs.map((r) => r.name).sort(), CHUNKS.map(shown).sort());
    for (const run of runs) assert.deepEqual(run.checkpoints.map((c) => [c.step, c.bytes]), [[7, 70]], run.name);
    for (const run of runs.filter((r) => !/[\udc80-\udcff]/.test(r.name))) assert.ok(fs.existsSync(run.path), `${JSON.stringify(run.path)} is the folder's exact path`);
  });

  test('names of 255 bytes (ASCII, 2- and 3-byte UTF-8), and checkpoint names of 255 bytes, are listed whole', { timeout: 120_000 }, async () => {
    const { root } = await list(roots.long);
    assert.equal(root.state, 'ok');
    const runs = root.state === 'ok' ? root.runs : [];
    assert.deepEqual(runs.map((r) => r.name).sort(), [...LONG_NAMES].sort());
    for (const run of runs) {
      assert.deepEqual(run.checkpoints.map((c) => c.step), [1, 100, 200, 300], run.name);
      for (const c of run.checkpoints) assert.ok(fs.existsSync(c.path), `${c.path} is a path that exists`);
    }
  });
});

describe('size', () => {
  test('100,000 files in a folder beside a run: the run is always found, the folder is named as listed in part (core and CLI)', { timeout: 300_000 }, async () => {
    const { root, logins } = await list(roots.many);
    assert.equal(logins, 1, 'the plain and the fair listing share one connection');
    assert.equal(root.truncated, true, 'a listing of 100,000 entries is not whole and must say so');
    // Whatever order the directory returns: the budget is shared, so the small run is whole and the big folder named.
    assert.equal(root.state, 'ok');
    assert.deepEqual(root.state === 'ok' ? root.runs.map((r) => [r.name, r.checkpoints.length]) : [], [['run_a', 2]]);
    assert.equal(root.tooLarge?.length, 1);
    assert.equal(root.tooLarge?.[0].rel, 'data');
    assert.equal(root.tooLarge?.[0].more, true);
    const text = cliLs(roots.many, false);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^run_a\t/m);
    assert.match(text.stdout, new RegExp(`listed in part, runs inside may be missing: ${roots.many}/data \\(over [\\d,]+ entries\\)`));
    const json = JSON.parse(cliLs(roots.many, true).stdout) as { roots: { truncated: boolean; tooLarge: { rel: string }[] }[] };
    assert.equal(json.roots[0].truncated, true);
    assert.deepEqual(json.roots[0].tooLarge.map((t) => t.rel), ['data']);
  });

  test('a run not found in a root listed in part says the listing was partial and where', { timeout: 300_000 }, async () => {
    const config = path.join(host.dir, 'cli-many-missing.json');
    fs.writeFileSync(config, JSON.stringify({ hosts: [host.hostConfig('box', { runRoots: [roots.many], targets: ['host'] })] }));
    const r = runBuiltCli(['ls', 'box/host/no_such_run', '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /not-found: No run named "no_such_run".*runs there: run_a.*listed in part.*\/data/);
    const ok = runBuiltCli(['ls', 'box/host/run_a', '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
    assert.equal(ok.code, 0, ok.stderr);
  });
});

describe('what cannot be read is said, and the rest is shown', () => {
  test('symlink loops: the run beside them is listed, the loop is reported, the walk ends', { timeout: 120_000 }, async () => {
    const { root } = await list(roots.loop);
    assert.equal(root.state, 'ok');
    assert.deepEqual(root.state === 'ok' ? root.runs.map((r) => [r.name, r.checkpoints.length]) : [], [['run_a', 3]]);
    assert.ok(root.unreadable && root.unreadable.count >= 1, `unreadable: ${JSON.stringify(root.unreadable)}`);
    assert.match(root.unreadable.messages.join('\n'), /loop/i);
    const text = cliLs(roots.loop, false);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /could not be read.*loop/i);
  });

  test('an unreadable subfolder: the readable run is listed, the subfolder is named as unreadable, its run is not invented', { timeout: 120_000 }, async () => {
    const { root } = await list(roots.partial);
    assert.equal(root.state, 'ok');
    assert.deepEqual(root.state === 'ok' ? root.runs.map((r) => r.name) : [], ['open-run']);
    assert.equal(root.unreadable?.count, 1);
    assert.match(root.unreadable!.messages[0], /locked.*Permission denied/);
    const json = cliLs(roots.partial, true);
    assert.equal(json.code, 0, json.stderr);
    const roots0 = JSON.parse(json.stdout).roots[0];
    assert.equal(roots0.unreadable?.count, 1, json.stdout);
    const text = cliLs(roots.partial, false);
    assert.match(text.stdout, /1 place could not be read: .*locked.*Permission denied/);
  });
});
