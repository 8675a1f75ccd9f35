/**
 * The README's CLI examples (the ```sh block after `<!-- test: cli-examples -->`) as a newcomer types them: in a
 * fresh clone and a fresh HOME, the demo host started as the README says (`npm run demo -- --headless`), then each
 * line of the block run literally by `sh`, in order, with what an `export` line exported kept for the lines after
 * it, as one terminal would. Each must exit 0 and print what its comment promises (an expectation per line below:
 * a line added to the README without one fails here, so every example keeps being checked).
 *
 * `npm link` is the block's own first line. Its global folder is the one the README offers for a user who cannot
 * write npm's default (`npm config set prefix ~/.local`, run here in the fresh HOME), so nothing lands outside the
 * test's folder; npm is kept offline (no audit, no update check): tests talk only to 127.0.0.1. The install is
 * `node_modules` linked from this checkout, as in demoQuickstart.test.ts (the clone's lock file must be identical).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { eventually } from '../harness/assertKind';
import { processesMentioning } from '../harness/processes';
import { groupMembers, spawnGroup, stopGroup, type GroupProcess } from '../e2e/processGroup';

const ROOT = path.join(__dirname, '..', '..');
let tmp: string;
let demo: GroupProcess | undefined;

/** What each README line must print (its command, comment stripped). */
const EXPECT: Record<string, (out: string, env: NodeJS.ProcessEnv) => void> = {
  'npm link': (_out, env) => {
    const bin = path.join(env.HOME!, '.local', 'bin', 'remote-runs');
    assert.ok(fs.existsSync(bin), `npm link put no remote-runs in ${path.dirname(bin)}`);
  },
  'export REMOTE_RUNS_CONFIG=~/.cache/remote-runs-demo/cli-config.json': (_out, env) => {
    assert.equal(env.REMOTE_RUNS_CONFIG, path.join(env.HOME!, '.cache', 'remote-runs-demo', 'cli-config.json'));
    assert.ok(fs.existsSync(env.REMOTE_RUNS_CONFIG!), 'the demo wrote the config the README names');
  },
  'remote-runs ls demo': (out) => {
    assert.match(out, /^host\s+host\s+running/m);
    assert.match(out, /^pct:200\s+pct\s+running/m);
    assert.match(out, /^pct:201\s+pct\s+stopped/m);
    assert.match(out, /^docker:\S+\s+docker\s+running/m);
  },
  'remote-runs ls demo/pct:200': (out) => assert.match(out, /^workspace\t\/workspace\t\d+ checkpoints, latest step \d+ .*live$/m),
  'remote-runs ls demo/pct:200/workspace': (out) => {
    assert.match(out, /^workspace\s+\/workspace\s+\(live\)$/m);
    assert.ok((out.match(/\bstep_\d+\b/g) ?? []).length >= 10, out);
    assert.match(out, /step_\d+ .* newest$/m);
  },
  'remote-runs metrics demo/pct:200/workspace': (out) => {
    assert.match(out, /^loss\s+\d+\s+\d+: [\d.]+\s+\d+: [\d.]+$/m);
    assert.match(out, /^acc\s+\d+/m);
  },
  // The live run's checkpoints are real torch.save archives; from step 12000 the model has a third layer.
  'remote-runs inspect demo/pct:200/workspace/latest': (out) => {
    assert.match(out, /^demo\/pct:200\/workspace\/step_\d+: \d+ params · fp32\/fp16 · \d+ tensors$/m);
    assert.match(out, /^format: torch-zip/m);
    assert.match(out, /layers\.2\.self_attn\.q_proj\.weight\s+float32\s+\[4, 4\]/);
  },
  'remote-runs diff demo/pct:200/workspace/step_10000 demo/pct:200/workspace/latest': (out) => {
    assert.match(out, /^added \(in B only\): 8$/m);
    assert.match(out, /^ {2}- rope_freqs {2}float32 \[2\]$/m);
    assert.match(out, /^ {2}~ layers\.1\.norm\.weight {2}float32 \[4\] → float16 \[4\]$/m);
  },
  'remote-runs pull demo/pct:200/workspace/latest --to ~/ckpts': (out, env) => {
    const local = out.trim();
    assert.match(local, new RegExp(`^${env.HOME}/ckpts/workspace/step_\\d+$`));
    assert.ok(fs.statSync(path.join(local, 'checkpoint.pt')).size > 1000, 'the checkpoint file is in place');
  },
};

/** The commands of the README's block marked `marker`, comments and blank lines dropped. */
function readmeBlock(marker: string): string[] {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf(`<!-- test: ${marker} -->`);
  assert.ok(at >= 0, `README.md has no <!-- test: ${marker} --> block`);
  const block = /^<!-- test: [\w-]+ -->\n```sh\n([\s\S]*?)\n```/.exec(readme.slice(at));
  assert.ok(block, `the ${marker} marker is not followed by a \`\`\`sh block`);
  return block[1]
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-readme-cli-'));
});
after(async () => {
  if (demo) await stopGroup(demo).catch(() => undefined);
  fs.rmSync(tmp, { recursive: true, force: true });
});

test("the README's CLI examples, each line as typed, against the demo host, in a fresh clone and HOME", { timeout: 600_000 }, async () => {
  const lines = readmeBlock('cli-examples');
  assert.ok(lines.length >= 4, `too few examples: ${lines.join(' | ')}`);
  for (const line of lines) assert.ok(EXPECT[line], `README line without an expectation in this test: ${line}`);

  const repo = path.join(tmp, 'remote-runs');
  execFileSync('git', ['clone', '-q', ROOT, repo]);
  assert.equal(fs.readFileSync(path.join(repo, 'package-lock.json'), 'utf8'), fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(repo, 'node_modules'));
  const home = path.join(tmp, 'home');
  fs.mkdirSync(home);
  const env: NodeJS.ProcessEnv = {
    PATH: `${path.join(home, '.local', 'bin')}:${process.env.PATH ?? ''}`,
    HOME: home,
    npm_config_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
  execFileSync('sh', ['-c', 'npm config set prefix ~/.local'], { cwd: home, env, stdio: 'ignore' });

  // The demo host as the README says, in its own process group like a terminal's job.
  demo = spawnGroup('npm', ['run', 'demo', '--', '--headless'], { cwd: repo, env });
  const running = demo;
  // Its last line once everything it has to say is printed.
  await eventually(() => /Stop everything with Ctrl-C/.test(running.output()) || running.child.exitCode !== null, 'the demo host starts', 180_000);
  assert.match(running.output(), /ready on 127\.0\.0\.1:\d+/, running.output());
  // What it prints is what the README says to type.
  const config = path.join(home, '.cache', 'remote-runs-demo', 'cli-config.json');
  assert.ok(running.output().includes(`export REMOTE_RUNS_CONFIG=${config}\n`), running.output());
  assert.match(running.output(), /^\s+remote-runs ls demo\/pct:200$/m);
  assert.ok(running.output().includes('npm link'), running.output());

  for (const line of lines) {
    const r = spawnSync('sh', ['-c', line], { cwd: repo, env, input: '', encoding: 'utf8', timeout: 180_000 });
    assert.equal(r.status, 0, `${line}\nexit ${r.status} ${r.signal ?? ''}\n${r.stdout}\n${r.stderr}`);
    const exported = /^export ([A-Za-z_][A-Za-z0-9_]*)=/.exec(line);
    if (exported) {
      // As the shell would carry it to the next line: the value it expanded (`~` included).
      const name = exported[1];
      env[name] = execFileSync('sh', ['-c', `${line}\nprintf %s "$${name}"`], { cwd: repo, env, encoding: 'utf8' });
    }
    EXPECT[line](r.stdout, env);
  }

  // Ctrl-C as a terminal sends it: the demo stops, and nothing of it, nor of the CLI runs, is left.
  process.kill(-running.pgid, 'SIGINT');
  await running.exited;
  await eventually(() => groupMembers(running.pgid).length === 0 && processesMentioning(tmp).length === 0, 'the demo and its machine exit', 60_000);
  assert.match(running.output(), /Demo stopped; nothing of it is left running/);
});
