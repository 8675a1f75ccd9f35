/** The headless CLI (the built bundle users run) against the real test sshd. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startTestHost, type TestHost } from '../harness/testHost';
import { ensureBuiltCli, runBuiltCli } from '../harness/builtCli';

let host: TestHost;
let config: string;

function cli(args: string[]): { code: number; stdout: string; stderr: string; json: any } {
  const r = runBuiltCli(args, host.clientHome, 60_000);
  let json: unknown;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { ...r, json };
}

before(async () => {
  ensureBuiltCli();
  host = await startTestHost();
  config = path.join(host.dir, 'config.json');
  fs.writeFileSync(
    config,
    JSON.stringify({
      hosts: [
        host.hostConfig('box'),
        host.hostConfig('roots', {
          runRoots: [host.paths.missing, host.paths.unrecognised],
          targets: ['host'],
        }),
        host.hostConfig('dl', { runRoots: [host.paths.runs], targets: ['host'] }),
      ],
    }),
  );
});
after(async () => {
  await host?.stop();
});

describe('remote-runs ls', () => {
  test('a host prints its targets', () => {
    const r = cli(['ls', 'box', '--json', '--config', config, '--known-hosts', host.knownHostsFile]);
    assert.equal(r.code, 0, r.stderr);
    const ids = r.json.targets.map((t: { id: string; state: string }) => `${t.id}=${t.state}`).sort();
    assert.deepEqual(ids, ['docker:old=stopped', 'docker:trainer=running', 'host=running', 'pct:200=running', 'pct:201=stopped']);
  });

  test('a run prints its checkpoints in step order with bytes and mtime', () => {
    const r = cli(['ls', 'box/pct:200/workspace', '--json', '--config', config, '--known-hosts', host.knownHostsFile]);
    assert.equal(r.code, 0, r.stderr);
    const run = r.json.run;
    assert.equal(run.name, 'workspace');
    assert.equal(run.path, '/workspace');
    assert.deepEqual(run.metrics, ['/workspace/logs/train.jsonl']);
    assert.deepEqual(run.checkpoints.map((c: { step: number }) => c.step), host.storySteps);
    for (const c of run.checkpoints) {
      assert.deepEqual(Object.keys(c).sort(), ['bytes', 'kind', 'mtime', 'name', 'path', 'step']);
      assert.equal(c.kind, 'step');
      assert.equal(c.bytes, 3 * 1024 ** 3);
      assert.ok(c.mtime > Date.now() - 24 * 3600_000 && c.mtime <= Date.now() + 60_000);
    }
  });

  test('a target prints its runs; the human form names each run', () => {
    const j = cli(['ls', 'box/docker:trainer', '--json', '--config', config, '--known-hosts', host.knownHostsFile]);
    assert.equal(j.code, 0, j.stderr);
    assert.deepEqual(j.json.runs.map((r: { name: string }) => r.name).sort(), ['flat-run', 'hf-run']);
    const t = cli(['ls', 'box/docker:trainer', '--config', config, '--known-hosts', host.knownHostsFile]);
    assert.equal(t.code, 0);
    assert.match(t.stdout, /hf-run\t\/workspace\/hf-run\t3 checkpoints/);
  });

  test('an ssh config alias works as an address', () => {
    const r = cli(['ls', 'testbox/pct:200', '--json', '--ssh-config', host.sshConfigFile, '--known-hosts', host.knownHostsFile]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.json.runs.length, 1);
  });

  test('failures print {"error":{kind,message}} and exit 2, each with its own kind', () => {
    const cases: [string, string][] = [
      ['box/pct:201', 'container-stopped'],
      ['box/pct:999', 'container-missing'],
      ['box/docker:trainer/nope', 'not-found'],
      ['roots/host', 'no-checkpoints'],
    ];
    for (const [address, kind] of cases) {
      const r = cli(['ls', address, '--json', '--config', config, '--known-hosts', host.knownHostsFile]);
      assert.equal(r.code, 2, `${address}: ${r.stdout}`);
      assert.equal(r.json.error.kind, kind, `${address}: ${r.json.error.message}`);
      assert.ok(r.json.error.message.length > 0);
    }
    // Both roots' own cases are named in the message: never folded into one.
    const r = cli(['ls', 'roots/host', '--json', '--config', config, '--known-hosts', host.knownHostsFile]);
    assert.match(r.json.error.message, /does-not-exist: path does not exist/);
    assert.match(r.json.error.message, /unrecognised: no runs recognised \(saw /);
  });

  test('without a terminal an unknown host key is refused, not trusted', () => {
    const empty = path.join(host.dir, 'kh-empty');
    fs.writeFileSync(empty, '');
    const r = cli(['ls', 'box', '--json', '--config', config, '--known-hosts', empty]);
    assert.equal(r.code, 2);
    assert.equal(r.json.error.kind, 'host-key-unknown');
    assert.equal(fs.readFileSync(empty, 'utf8'), '');
  });

  test("the config's knownHostsFiles replace ~/.ssh/known_hosts (a relative one is the config's neighbour); --known-hosts wins", () => {
    // ~/.ssh/known_hosts of the client home holds the host's key: only a config naming other files can refuse it.
    const dir = fs.mkdtempSync(path.join(host.dir, 'kh-config-'));
    fs.writeFileSync(path.join(dir, 'empty_known_hosts'), '');
    fs.copyFileSync(host.knownHostsFile, path.join(dir, 'known_hosts'));
    const withFile = (file: string): string => {
      const p = path.join(dir, `config-${path.basename(file)}.json`);
      fs.writeFileSync(p, JSON.stringify({ hosts: [host.hostConfig('box')], knownHostsFiles: [file] }));
      return p;
    };
    const refused = cli(['ls', 'box', '--json', '--config', withFile(path.join(dir, 'empty_known_hosts'))]);
    assert.equal(refused.code, 2, refused.stderr);
    assert.equal(refused.json.error.kind, 'host-key-unknown');
    assert.equal(fs.readFileSync(path.join(dir, 'empty_known_hosts'), 'utf8'), '', 'nothing is added without a terminal');
    const relative = cli(['ls', 'box', '--json', '--config', withFile('known_hosts')]);
    assert.equal(relative.code, 0, relative.stderr);
    assert.ok(relative.json.targets.some((t: { id: string }) => t.id === 'pct:200'));
    const pinned = cli(['ls', 'box', '--json', '--config', withFile(path.join(dir, 'empty_known_hosts')), '--known-hosts', host.knownHostsFile]);
    assert.equal(pinned.code, 0, pinned.stderr);
  });

  test('a bad address is a usage error with the accepted forms', () => {
    const r = cli(['ls', 'box/lxc:1', '--json', '--config', config]);
    assert.equal(r.code, 2);
    assert.equal(r.json.error.kind, 'bad-address');
  });
});

describe('remote-runs pull', () => {
  test('pulls the latest checkpoint into DIR/<run>/<checkpoint>/, prints the path, and says so when it is already there', () => {
    const to = fs.mkdtempSync(path.join(host.dir, 'pull-'));
    const r = cli(['pull', 'dl/host/story/latest', '--to', to, '--verify', '--config', config, '--known-hosts', host.knownHostsFile]);
    assert.equal(r.code, 0, r.stderr);
    const last = host.storySteps[host.storySteps.length - 1];
    const local = path.join(to, 'story', `step_${last}`);
    assert.equal(r.stdout.trim(), local);
    const file = path.join(local, 'checkpoint.pt');
    const remote = path.join(host.paths.runs, 'story', 'checkpoints', `step_${last}`, 'checkpoint.pt');
    assert.equal(fs.statSync(file).size, fs.statSync(remote).size);
    assert.equal(sha256(file), sha256(remote));
    assert.ok(!fs.existsSync(`${file}.part`) && !fs.existsSync(path.join(to, '.remote-runs', 'partial', 'story', `step_${last}`, 'checkpoint.pt.part')), 'no .part left behind');
    assert.deepEqual(fs.readdirSync(local), ['checkpoint.pt'], 'nothing beside the checkpoint file');
    assert.match(r.stderr, /verified by SHA-256 on both sides/);
    const again = cli(['pull', 'dl/host/story/latest', '--to', to, '--config', config, '--known-hosts', host.knownHostsFile]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /already there/);
    assert.match(again.stderr, /0 B fetched/);
  });

  test('a checkpoint by step number; a local file that differs is not overwritten without a terminal', () => {
    const to = fs.mkdtempSync(path.join(host.dir, 'pull-'));
    const step = host.storySteps[0];
    const target = path.join(to, 'story', `step_${step}`, 'checkpoint.pt');
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, 'my own notes, not a checkpoint');
    const r = cli(['pull', `dl/host/story/${step}`, '--to', to, '--json', '--config', config, '--known-hosts', host.knownHostsFile]);
    assert.equal(r.code, 2);
    assert.equal(r.json.error.kind, 'exists');
    assert.equal(fs.readFileSync(target, 'utf8'), 'my own notes, not a checkpoint');
  });

  test('an unknown checkpoint names the ones that are there', () => {
    const r = cli(['pull', 'dl/host/story/step_999', '--json', '--config', config, '--known-hosts', host.knownHostsFile]);
    assert.equal(r.code, 2);
    assert.equal(r.json.error.kind, 'not-found');
    assert.match(r.json.error.message, /step_10000/);
  });
});

function sha256(file: string): string {
  return execFileSync('sha256sum', [file], { encoding: 'utf8' }).split(' ')[0];
}
