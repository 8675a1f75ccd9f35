/**
 * Run configs and the run table over the real test sshd (issue 17), and "Add run…" listing across hosts:
 * - the config files beside a run are read with one bounded command on the pooled connection, for a run whose path
 *   is hostile; Lightning's hparams.yaml (Python tags, written by PyYAML as Lightning does), a Hugging Face
 *   config.json and argparse's args.json as their writers leave them (test/fixtures/real/make_configs.py); a file too
 *   large, one that is not valid YAML and one the login user may not read each give their row;
 * - the run table of the target: latest step and last values from the same RunFeed the panels use, and only the
 *   config keys that differ between the runs; all of it over one login;
 * - runs listed across every configured host, metrics runs only, an unreachable host marked.
 * The login user is the harness's unprivileged `rrtest`, so "permission denied" is real although tests run as root.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';

import { HostDirectory } from '../../src/core/hosts';
import { RemoteRunsCore, runsOf } from '../../src/core/service';
import { runCommand } from '../../src/core/remote';
import { runConfigCommand, mergedConfig } from '../../src/core/runs/config';
import { buildRunTable, runTableCells } from '../../src/core/runs/table';
import { addRunChoices, listRunsEverywhere } from '../../src/core/tree/runsEverywhere';
import { RunFactsReader } from '../../src/extension/runs/runFacts';
import type { HostConfig } from '../../src/core/types';
import { startTestHost, type TestHost } from '../harness/testHost';
import { testPool } from '../builders/pool';

const HOST = { kind: 'host' as const, id: '' };
const FIXTURES = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'configs');
const HOSTILE = `exp $(touch pwned) 'q' "d"`;
let host: TestHost;
let root: string;
let otherRoot: string;
let closedPort: number;

function write(file: string, data: string | Buffer, mode = 0o644): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
  fs.writeFileSync(file, data);
  fs.chmodSync(file, mode);
}

const metricsLines = (lr: number, steps: number[]) => steps.map((s) => JSON.stringify({ step: s, loss: 2 - s / 1000, lr })).join('\n') + '\n';

before(async () => {
  host = await startTestHost();
  root = path.join(host.dir, 'cfg-runs');
  otherRoot = path.join(host.dir, 'cfg-other');
  fs.mkdirSync(root, { mode: 0o755 });
  fs.mkdirSync(otherRoot, { mode: 0o755 });
  // Run 1 (hostile name): the real writers' files, plus one too large, one invalid, one unreadable.
  const r1 = path.join(root, HOSTILE);
  write(path.join(r1, 'metrics.jsonl'), metricsLines(0.001, [10, 20, 30]));
  for (const f of ['hparams.yaml', 'config.json', 'args.json']) write(path.join(r1, f), fs.readFileSync(path.join(FIXTURES, f)));
  write(path.join(r1, 'config.yaml'), 'model: {layers: 12\n'); // unterminated flow mapping
  write(path.join(r1, 'config.yml'), 'secret: 1\n', 0o600); // root's, not the login user's
  // Run 2: its own hparams (another lr) and a config.json far over the read bound.
  const r2 = path.join(root, 'exp2');
  write(path.join(r2, 'metrics.jsonl'), metricsLines(0.01, [10, 20, 30, 40]));
  write(path.join(r2, 'hparams.yaml'), fs.readFileSync(path.join(FIXTURES, 'hparams.yaml'), 'utf8').replace(/^lr: 0\.001$/m, 'lr: 0.01'));
  write(path.join(r2, 'config.json'), `{"pad": "${'x'.repeat(2 * 1024 * 1024)}"}`);
  // A run with checkpoints only (no metrics log): not a run to compare.
  fs.mkdirSync(path.join(otherRoot, 'ckpts-only', 'step_100'), { recursive: true, mode: 0o755 });
  write(path.join(otherRoot, 'ckpts-only', 'step_100', 'model.pt'), Buffer.alloc(16));
  write(path.join(otherRoot, 'far', 'metrics.jsonl'), metricsLines(0.1, [1, 2]));
  closedPort = await new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
});

after(async () => {
  await host?.stop();
});

function makeCore(hosts: HostConfig[]) {
  const pool = testPool(host, { connectTimeoutMs: 10_000 });
  const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  return { core: new RemoteRunsCore({ hosts: () => hosts, executorFor: (h) => pool.executor(dir.resolve(h), { idempotent: true }) }), pool };
}

test('config files beside a hostile-named run: one bounded command; real writers\' files read, bad ones a clear row each', async () => {
  const { core, pool } = makeCore([host.hostConfig('box', { runRoots: [root], targets: ['host'] })]);
  try {
    const runPath = path.join(root, HOSTILE);
    const config = await runCommand(core.executor('box'), HOST, runConfigCommand(runPath));
    const rows = Object.fromEntries(config.files.map((f) => [f.name, f.ok ? `ok ${Object.keys(f.values).length}` : f.error]));
    assert.match(rows['config.yaml']!, /^config\.yaml is not valid YAML: /);
    assert.equal(rows['config.yml'], 'config.yml cannot be read by the login user (permission denied)');
    assert.match(rows['hparams.yaml']!, /^ok /);
    assert.match(rows['config.json']!, /^ok /);
    assert.match(rows['args.json']!, /^ok /);
    const merged = mergedConfig(config);
    assert.equal(merged['betas'], '[0.9,0.95]', "Lightning's !!python/tuple read as a list");
    assert.equal(merged['args.batch_size'], '32', 'an argparse Namespace read as its fields, never constructed');
    assert.equal(merged['scheduler.warmup'], '500');
    assert.equal(merged['model_type'], 'gpt2', "Hugging Face's config.json");
    assert.equal(merged['fp16'], 'true', "argparse's args.json");
    assert.ok(!fs.existsSync(path.join(root, HOSTILE, 'pwned')) && !fs.existsSync('pwned'), 'the run path never ran as code');

    const big = await runCommand(core.executor('box'), HOST, runConfigCommand(path.join(root, 'exp2')));
    const json = big.files.find((f) => f.name === 'config.json')!;
    assert.ok(!json.ok && /^config\.json is 2\.1 MB: too large to be a config/.test(json.error), JSON.stringify(json));
    await assert.rejects(runCommand(core.executor('box'), HOST, runConfigCommand(path.join(root, 'gone'))), (e: Error & { kind?: string }) => e.kind === 'path-missing');
  } finally {
    pool.dispose();
  }
});

test('the run table of a target: latest step, last values and only the differing config keys, over one login', async () => {
  const { core, pool } = makeCore([host.hostConfig('box', { runRoots: [root], targets: ['host'] })]);
  const logins = host.sshd.acceptedLogins();
  try {
    const listing = await core.listTarget('box', HOST);
    const runs = runsOf(listing);
    assert.deepEqual(runs.map((r) => r.name).sort(), ['exp2', HOSTILE].sort());
    const facts = await new RunFactsReader(core).facts('box', HOST, runs);
    const table = buildRunTable(facts, listing.remoteNow);
    const cells = runTableCells(table);
    const byName = new Map(cells.slice(1).map((r) => [r[0], r]));
    const col = (name: string) => cells[0]!.indexOf(name);
    assert.equal(byName.get('exp2')![col('latest step')], '40');
    assert.equal(byName.get(HOSTILE)![col('latest step')], '30');
    assert.equal(byName.get('exp2')![col('loss')], '1.96');
    assert.ok(table.differing.includes('lr'), `lr differs: ${table.differing.join(', ')}`);
    assert.ok(!table.differing.includes('layers') && !table.differing.includes('betas'), 'keys both runs set alike are not columns');
    assert.equal(byName.get('exp2')![col('lr')], '0.01');
    assert.match(byName.get('exp2')![col('notes')]!, /config\.json is 2\.1 MB: too large/);
    assert.equal(host.sshd.acceptedLogins() - logins, 1, 'every read on the one pooled connection');
  } finally {
    pool.dispose();
  }
});

test('"Add run…" lists runs with metrics on every configured host; an unreachable host is marked with its reason', async () => {
  const hosts = [
    host.hostConfig('a', { runRoots: [root], targets: ['host'] }),
    host.hostConfig('b', { runRoots: [otherRoot], targets: ['host'] }),
    { ...host.hostConfig('down', { runRoots: [root], targets: ['host'] }), port: closedPort },
  ];
  const { core, pool } = makeCore(hosts);
  try {
    const places = await listRunsEverywhere(core, hosts.map((h) => h.name));
    const choices = addRunChoices(places);
    assert.deepEqual(
      choices.map((c) => [c.kind, c.label, c.description.replace(' · live', '')]).sort(), // just written: live
      [
        ['run', 'exp2', 'a/host'],
        ['run', HOSTILE, 'a/host'],
        ['run', 'far', 'b/host'],
        ['unreachable', 'down', 'unreachable'],
      ].sort(),
    );
    assert.ok(!choices.some((c) => c.label === 'ckpts-only'), 'a run without metrics logs is not offered');
    assert.match(choices.find((c) => c.label === 'down')!.detail, /refused|ECONNREFUSED/i);
  } finally {
    pool.dispose();
  }
});
