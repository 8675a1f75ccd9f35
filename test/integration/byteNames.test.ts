/**
 * Remote names are bytes (issue 35, item 2), with the built CLI against the real test sshd: a run folder whose name
 * ends in the bytes 0xFF 0xFE (not UTF-8) beside a folder literally named `badutf8\xff\xfe` (backslashes), each
 * with a checkpoint holding a file `bad<0xFF>.bin` and a metrics log of its own. The address typed as `ls` shows it
 * names exactly that folder in `ls`, `metrics`, `inspect`, `pull` and `eval`; each pull takes its own folder's files,
 * verified against them, and writes the remote bytes as the local names (a 254-byte one too); a second pull finds
 * them there.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startTestHost, type TestHost } from '../harness/testHost';
import { ensureBuiltCli, runBuiltCli, type CliResult } from '../harness/builtCli';

let host: TestHost;
let config: string;
let root: string;

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'hostile_names', 'model.safetensors');
const BYTES_RUN = Buffer.concat([Buffer.from('badutf8'), Buffer.from([0xff, 0xfe])]);
const LITERAL_RUN = Buffer.from('badutf8\\xff\\xfe');
const BAD_FILE = Buffer.concat([Buffer.from('bad'), Buffer.from([0xff]), Buffer.from('.bin')]);
/** 254 bytes: a name the local file system holds, whose `.part.json` state file name would not fit in 255. */
const LONG_FILE = Buffer.concat([Buffer.from('L'.repeat(249)), Buffer.from([0xff]), Buffer.from('.bin')]);
/** Each folder's own content, so a pull that took the other's files is seen. */
const CONTENT = new Map<Buffer, string>([
  [BYTES_RUN, 'the folder whose name holds the bytes 0xFF 0xFE'],
  [LITERAL_RUN, 'the folder literally named with backslashes'],
]);

function cli(args: string[], timeoutMs = 120_000): CliResult {
  return runBuiltCli([...args, '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome, timeoutMs);
}

function join(...parts: (string | Buffer)[]): Buffer {
  return Buffer.concat(parts.flatMap((p, i) => (i === 0 ? [Buffer.from(p)] : [Buffer.from('/'), Buffer.from(p)])));
}

before(async () => {
  ensureBuiltCli();
  host = await startTestHost();
  root = path.join(host.dir, 'byte-runs');
  for (const [run, text] of CONTENT) {
    const ckpt = join(root, run, 'checkpoints', 'step_10');
    fs.mkdirSync(ckpt, { recursive: true });
    fs.writeFileSync(join(ckpt, BAD_FILE), text);
    if (run === BYTES_RUN) fs.writeFileSync(join(ckpt, LONG_FILE), 'long');
    // Each folder's weights under a name of its own, so an inspect of the wrong folder is seen.
    fs.copyFileSync(FIXTURE, join(ckpt, run === BYTES_RUN ? 'model.safetensors' : 'other.safetensors'));
    fs.mkdirSync(join(root, run, 'logs'));
    const loss = run === BYTES_RUN ? 0.25 : 0.75;
    fs.writeFileSync(join(root, run, 'logs', 'train.jsonl'), `{"step":1,"loss":${loss}}\n{"step":2,"loss":${loss}}\n`);
  }
  execFileSync('chmod', ['-R', 'a+rwX', root]);
  // Saved a minute ago: complete checkpoints, not ones being written.
  const old = new Date(Date.now() - 60_000);
  execFileSync('find', [root, '-exec', 'touch', '-d', old.toISOString(), '{}', '+']);
  config = path.join(host.dir, 'byte-names-cli.json');
  fs.writeFileSync(
    config,
    JSON.stringify({
      hosts: [host.hostConfig('box', { runRoots: [root], targets: ['host'] })],
      // The checkpoint's path reaches the eval's shell as its bytes: the glob finds the folder's own file.
      evalProfiles: [{ name: 'read', where: 'target', command: 'cat ${checkpoint}/bad*.bin; echo' }],
    }),
  );
});
after(async () => {
  await host?.stop();
});

/** As `ls` shows them, and as they are typed. */
const SHOWN_BYTES = 'badutf8\\xff\\xfe';
const SHOWN_LITERAL = 'badutf8\\\\xff\\\\xfe';

describe('names that are not UTF-8, addressed as shown', () => {
  test('ls lists both folders, and ls of each address lists its own checkpoint and file', () => {
    const r = cli(['ls', 'box/host']);
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout.split('\n').map((l) => l.split('\t')[0]);
    assert.ok(rows.includes(SHOWN_BYTES), r.stdout);
    assert.ok(rows.includes(SHOWN_LITERAL), r.stdout);
    for (const shown of [SHOWN_BYTES, SHOWN_LITERAL]) {
      const one = cli(['ls', `box/host/${shown}`, '--json']);
      assert.equal(one.code, 0, `${shown}: ${one.stderr}`);
      const j = JSON.parse(one.stdout) as { runs?: { name: string }[]; name?: string; checkpoints?: { name: string }[] };
      assert.match(one.stdout, /step_10/, one.stdout);
      assert.ok(j, shown);
    }
  });

  test('metrics of each address reads its own log', () => {
    for (const [shown, loss] of [
      [SHOWN_BYTES, 0.25],
      [SHOWN_LITERAL, 0.75],
    ] as const) {
      const r = cli(['metrics', `box/host/${shown}`, '--json']);
      assert.equal(r.code, 0, `${shown}: ${r.stderr}`);
      assert.ok(r.stdout.includes(String(loss)), `${shown} must read its own log (loss ${loss}): ${r.stdout.slice(0, 1000)}`);
      assert.ok(!r.stdout.includes(String(loss === 0.25 ? 0.75 : 0.25)), `${shown} read the other folder's log: ${r.stdout.slice(0, 1000)}`);
    }
  });

  test('inspect of the checkpoint under the byte-named run reads its own header, not the look-alike\'s', () => {
    const r = cli(['inspect', `box/host/${SHOWN_BYTES}/step_10`, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout) as { tensors: unknown[]; address: string };
    assert.ok(j.tensors.length > 0, r.stdout.slice(0, 500));
    // Its address is the one typed, so a program can pass it back as is.
    assert.equal(j.address, `box/host/${SHOWN_BYTES}/step_10`);
    const text = cli(['inspect', `box/host/${SHOWN_LITERAL}/step_10`]);
    assert.equal(text.code, 0, text.stderr);
    assert.ok(text.stdout.startsWith(`box/host/${SHOWN_LITERAL}/step_10: `), text.stdout.slice(0, 300));
    assert.ok(r.stdout.includes('model.safetensors') && !r.stdout.includes('other.safetensors'), `the byte-named folder's own file: ${r.stdout.slice(0, 500)}`);
  });

  test('pull of each takes its own folder\'s files, verified, under the remote bytes as local names; again: already there', () => {
    const to = path.join(host.dir, 'byte-pulls');
    for (const [run, text] of CONTENT) {
      const shown = run === BYTES_RUN ? SHOWN_BYTES : SHOWN_LITERAL;
      const r = cli(['pull', `box/host/${shown}/step_10`, '--to', to]);
      assert.equal(r.code, 0, `${shown}: ${r.stdout}${r.stderr}`);
      assert.match(r.stdout + r.stderr, /verified/i);
      const local = join(to, run, 'step_10');
      const names = fs.readdirSync(local, { encoding: 'buffer' });
      assert.ok(names.some((n) => n.equals(BAD_FILE)), `the local name is the remote's bytes: ${names.map((n) => n.toString('hex')).join(', ')}`);
      assert.equal(fs.readFileSync(join(local, BAD_FILE), 'utf8'), text, `${shown} got its own file`);
      // The name is shown as ls shows it: the byte as \xff, never U+FFFD.
      assert.ok(!(r.stdout + r.stderr).includes('\ufffd'), r.stdout + r.stderr);
    }
    // A 254-byte name arrives under its name (its state files are keyed by a hash of it, as they would not fit).
    assert.equal(fs.readFileSync(join(to, BYTES_RUN, 'step_10', LONG_FILE), 'utf8'), 'long');
    // Two local run folders, one per remote folder; nothing under U+FFFD.
    const runs = fs.readdirSync(to, { encoding: 'buffer' }).filter((n) => !n.toString().startsWith('.'));
    assert.deepEqual(runs.map((n) => n.toString('hex')).sort(), [BYTES_RUN.toString('hex'), LITERAL_RUN.toString('hex')].sort());
    // The records are keyed on the bytes: the second pull finds the files there.
    const file = join(to, BYTES_RUN, 'step_10', BAD_FILE);
    const before = fs.statSync(file).mtimeMs;
    const again = cli(['pull', `box/host/${SHOWN_BYTES}/step_10`, '--to', to]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /already/i, again.stderr);
    assert.equal(fs.statSync(file).mtimeMs, before, 'the file already there was not fetched again');
  });

  test('eval of each address runs on its own folder\'s checkpoint', () => {
    for (const [run, text] of CONTENT) {
      const shown = run === BYTES_RUN ? SHOWN_BYTES : SHOWN_LITERAL;
      const r = cli(['eval', 'read', `box/host/${shown}/step_10`, '--follow']);
      assert.equal(r.code, 0, `${shown}: ${r.stdout}${r.stderr}`);
      assert.equal(r.stdout, `${text}\n`, `${shown}: ${r.stderr}`);
    }
  });

  test('an address with a backslash that is no escape is refused with why', () => {
    const r = cli(['pull', 'box/host/badutf8\\q/step_10']);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /bad-address: .*a backslash starts an escape/);
  });
});
