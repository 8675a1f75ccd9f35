/**
 * The demo training host (src/demo) as a client meets it: only its own key gets in, it only ever listens on
 * 127.0.0.1, its commands see the demo machine and not this machine's files, the CLI lists it, the live run grows,
 * SFTP reads its files, and stopping it ends every process it started (detached ones too).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runDemoCli } from '../harness/builtCli';
import { execFileSync, spawn } from 'node:child_process';
import { Client, type ConnectConfig } from 'ssh2';
import { generateEd25519 } from '../../src/demo/keys';
import { startDemoHost, type DemoHost } from '../../src/demo/demoHost';
import { assertLoopbackBind, startDemoServer } from '../../src/demo/server';

const ROOT = path.join(__dirname, '..', '..');
const CLI = path.join(ROOT, 'dist', 'cli.js');
let host: DemoHost;
let base: string;

before(async () => {
  if (!fs.existsSync(CLI)) execFileSync(process.execPath, ['esbuild.mjs'], { cwd: ROOT, stdio: 'ignore' });
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-demo-'));
  host = await startDemoHost({ base, lineIntervalMs: 200 });
});
after(async () => {
  await host?.stop();
  if (base) fs.rmSync(base, { recursive: true, force: true });
});

function connect(extra: Partial<ConnectConfig>): Promise<Client> {
  return new Promise((resolve, reject) => {
    const c = new Client();
    c.on('ready', () => resolve(c));
    c.on('error', reject);
    c.connect({ host: '127.0.0.1', port: host.port, username: 'root', readyTimeout: 10_000, ...extra });
  });
}

function exec(c: Client, command: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    c.exec(command, (err, ch) => {
      if (err) return reject(err);
      let stdout = '';
      let stderr = '';
      let code: number | null = null;
      ch.on('data', (b: Buffer) => (stdout += b.toString()));
      ch.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
      ch.on('exit', (c2: number | null) => (code = c2));
      ch.on('close', () => resolve({ code, stdout, stderr }));
    });
  });
}

const demoKey = (): Buffer => fs.readFileSync(host.keys.clientKeyPath);

/** The built CLI against the demo host (test/harness/builtCli.ts runDemoCli). */
const cli = (args: string[]): ReturnType<typeof runDemoCli> => runDemoCli(host.paths, base, args);

describe('demo host: who gets in, and where it listens', () => {
  test('the demo client key logs in; another key, a password and no key are refused', async () => {
    const ok = await connect({ privateKey: demoKey() });
    assert.equal((await exec(ok, 'echo in')).stdout, 'in\n');
    ok.end();

    const before = host.server.refusedLogins();
    const other = generateEd25519();
    await assert.rejects(connect({ privateKey: other.private }), /authentication methods failed/i);
    await assert.rejects(connect({ password: 'root' }), /authentication methods failed/i);
    await assert.rejects(connect({}), /authentication methods failed|no authentication methods/i);
    assert.ok(host.server.refusedLogins() > before, 'the foreign key was counted as refused');
  });

  test('it listens on 127.0.0.1 only and refuses to bind anything else', async () => {
    assert.equal(host.server.address, '127.0.0.1');
    for (const bad of ['0.0.0.0', '::', '::1', '192.168.1.10', 'localhost', '']) {
      assert.throws(() => assertLoopbackBind(bad), /only listens on 127\.0\.0\.1/);
      await assert.rejects(
        startDemoServer({ hostKey: host.keys.hostPrivate, clientPublicKey: host.keys.clientPublicLine, machine: host.machine, bindAddress: bad }),
        /only listens on 127\.0\.0\.1/,
      );
    }
  });
});

describe('demo host: the machine its commands run on', () => {
  test('commands see the demo tree, never this machine\'s own files', async () => {
    const secret = path.join(base, 'outside-secret.txt');
    fs.writeFileSync(secret, 'not for the demo\n');
    const c = await connect({ privateKey: demoKey() });
    try {
      const top = await exec(c, 'ls -1 /');
      const names = top.stdout.trim().split('\n').sort();
      assert.ok(names.includes('workspace') && names.includes('root') && names.includes('usr'), top.stdout);
      for (const hidden of ['home', 'work', 'srv', 'mnt']) assert.ok(!names.includes(hidden), `/${hidden} is visible: ${top.stdout}`);
      const peek = await exec(c, `cat ${secret}; ls ${os.homedir()}/.ssh 2>&1; test -e ${ROOT}/package.json && echo LEAK`);
      assert.doesNotMatch(peek.stdout, /not for the demo|LEAK/);
      // The real system folders are there but read-only, even for a demo started by root.
      const write = await exec(c, 'touch /usr/rr-demo-write-test');
      assert.notEqual(write.code, 0);
      assert.match(write.stderr, /Read-only file system/);
      assert.equal(fs.existsSync('/usr/rr-demo-write-test'), false);
      // The story, reenacted: the *.pt glob finds nothing although the checkpoints are one level down.
      const story = await exec(c, `pct exec 200 -- sh -c 'ls -la /workspace/checkpoints/*.pt 2>/dev/null || echo "no checkpoints"'`);
      assert.equal(story.stdout, 'no checkpoints\n');
      const steps = await exec(c, 'pct exec 200 -- ls /workspace/checkpoints');
      assert.ok(steps.stdout.split('\n').filter((l) => /^step_\d+$/.test(l)).length >= 10, steps.stdout);
    } finally {
      c.end();
    }
  });

  test('pct and docker answer as the real tools do, with their exit codes', async () => {
    const c = await connect({ privateKey: demoKey() });
    try {
      const list = await exec(c, 'pct list');
      assert.match(list.stdout, /^VMID +Status +Lock +Name/);
      assert.match(list.stdout, /\n200 +running +trainer-ct/);
      const stopped = await exec(c, 'pct exec 201 -- true');
      assert.equal(stopped.code, 255);
      assert.equal(stopped.stderr, "container '201' not running!\n");
      const missing = await exec(c, 'docker exec -i nope true');
      assert.equal(missing.code, 1);
      assert.equal(missing.stderr, 'Error response from daemon: No such container: nope\n');
      const ps = await exec(c, "docker ps -a --no-trunc --format '{{.Names}}\\t{{.State}}'");
      assert.deepEqual(ps.stdout.trim().split('\n').sort(), ['eval-old\texited', 'hf-finetune\trunning']);
      const inside = await exec(c, 'docker exec -i hf-finetune ls /workspace/llama-sft');
      assert.match(inside.stdout, /checkpoint-2000/);
      const code = await exec(c, 'exit 7');
      assert.equal(code.code, 7);
    } finally {
      c.end();
    }
  });

  test('the live run grows while the demo runs, and saves checkpoints', async () => {
    const c = await connect({ privateKey: demoKey() });
    try {
      const count = async (): Promise<number> => Number((await exec(c, 'pct exec 200 -- wc -l /workspace/logs/train.jsonl')).stdout.trim().split(/\s+/)[0]);
      const first = await count();
      let later = first;
      // The trainer logs a line a second; the limit bounds hanging on a loaded machine, it measures nothing.
      for (let i = 0; i < 600 && later <= first; i++) {
        await new Promise((r) => setTimeout(r, 100));
        later = await count();
      }
      assert.ok(later > first, `log did not grow: ${first} → ${later}`);
      const last = JSON.parse((await exec(c, 'pct exec 200 -- tail -n 1 /workspace/logs/train.jsonl')).stdout);
      assert.deepEqual(Object.keys(last).sort(), ['acc', 'grad_norm', 'loss', 'lr', 'step', 'streak', 'time']);
      // The trainer may have logged again since tail read the file: the step is one it logged, up to now.
      assert.ok(last.step > 21_760 && last.step <= host.trainer.currentStep && last.step % 16 === 0, `step ${last.step}`);
    } finally {
      c.end();
    }
    // A tick past a multiple of 2000 writes the next checkpoint (driven here with the timer stopped, not waited for).
    host.trainer.stop();
    const before = fs.readdirSync(host.tree.live.checkpoints).length;
    while (Math.floor((host.trainer.currentStep + 16) / 2000) === Math.floor(host.trainer.currentStep / 2000)) host.trainer.tick();
    host.trainer.tick();
    assert.equal(fs.readdirSync(host.tree.live.checkpoints).length, before + 1);
  });

  test('SFTP reads the machine\'s files and refuses writes', async () => {
    const c = await connect({ privateKey: demoKey() });
    try {
      const sftp = await new Promise<import('ssh2').SFTPWrapper>((resolve, reject) => c.sftp((e, s) => (e ? reject(e) : resolve(s))));
      const text = await new Promise<string>((resolve, reject) =>
        sftp.readFile('/workspace/README.md', (e, b) => (e ? reject(e) : resolve(b.toString()))),
      );
      assert.equal(text, fs.readFileSync(path.join(host.paths.machine, 'workspace', 'README.md'), 'utf8'));
      const st = await new Promise<import('ssh2').Stats>((resolve, reject) => sftp.stat('/root/checkpoints/step_10000/checkpoint.pt', (e, s) => (e ? reject(e) : resolve(s))));
      assert.equal(st.size, Math.round(3.2 * 1024 ** 3));
      const names = await new Promise<string[]>((resolve, reject) => sftp.readdir('/root/checkpoints', (e, l) => (e ? reject(e) : resolve(l.map((x) => x.filename)))));
      assert.equal(names.filter((n) => n.startsWith('step_')).length, 12);
      await assert.rejects(
        new Promise<void>((resolve, reject) => sftp.writeFile('/root/new.txt', 'x', (e) => (e ? reject(e) : resolve()))),
        /read-only|denied/i,
      );
      await assert.rejects(new Promise<void>((resolve, reject) => sftp.stat('/home', (e) => (e ? reject(e) : resolve()))), /No such file/);
    } finally {
      c.end();
    }
  });
});

describe('demo host: what a command writes reaches the client', () => {
  /** OpenSSH's own client (no connection sharing), running `command` on the demo host. */
  function ssh(command: string): Promise<{ code: number | null; stdout: number; stderr: string }> {
    const child = spawn(
      'ssh',
      ['-F', 'none', '-i', host.keys.clientKeyPath, '-p', String(host.port), '-o', 'IdentitiesOnly=yes', '-o', `UserKnownHostsFile=${host.paths.knownHosts}`, '-o', 'BatchMode=yes', 'root@127.0.0.1', command],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = 0;
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.length));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  }

  test('a command that keeps stdout busy to its end and then writes one stderr line: every byte, the line, exit 0 (issue 33)', async () => {
    // A download's stream in small: the range on stdout, the remote SHA-256 as the last stderr line. ssh2's server
    // dropped such a line when it waited for the window as stdout ended.
    for (let i = 0; i < 3; i++) {
      const r = await ssh("head -c 67108864 /dev/zero; echo 'rr-sha256 last-line' >&2");
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 64 * 1024 * 1024);
      assert.match(r.stderr, /^rr-sha256 last-line$/m, `run ${i + 1}: the last stderr line arrived`);
    }
  });
});

describe('demo host: the CLI against it (headless config)', () => {
  test('ls lists the targets, and the live run with its checkpoints', async () => {
    const targets = await cli(['ls', 'demo']);
    assert.equal(targets.code, 0, targets.stderr);
    assert.deepEqual(
      targets.json.targets.map((t: { id: string; state: string }) => `${t.id}=${t.state}`).sort(),
      ['docker:eval-old=stopped', 'docker:hf-finetune=running', 'host=running', 'pct:200=running', 'pct:201=stopped'],
    );
    const live = await cli(['ls', 'demo/pct:200/workspace']);
    assert.equal(live.code, 0, live.stderr);
    assert.equal(live.json.run.live, true);
    assert.deepEqual(live.json.run.metrics, ['/workspace/logs/train.jsonl']);
    const steps: number[] = live.json.run.checkpoints.map((c: { step: number }) => c.step);
    assert.ok(steps.length >= 10, JSON.stringify(steps));
    assert.deepEqual(steps.slice(0, 10), [2000, 4000, 6000, 8000, 10000, 12000, 14000, 16000, 18000, 20000]);
    const onHost = await cli(['ls', 'demo/host']);
    assert.equal(onHost.code, 0, onHost.stderr);
    const names = onHost.json.runs.map((r: { name: string }) => r.name).sort();
    assert.deepEqual(names, ['baseline-ref', 'checkpoints']);
    const workspace = onHost.json.roots.find((r: { root: string }) => r.root === '/workspace');
    assert.equal(workspace.state, 'no-checkpoints');
    assert.deepEqual([...workspace.seen].sort(), ['README.md', 'datasets', 'scripts']);
  });
});

describe('demo host: stopping it', () => {
  test('stop ends every process of the machine, a detached one included', async () => {
    const c = await connect({ privateKey: demoKey() });
    const r = await exec(c, "pct exec 200 -- setsid sh -c 'sleep 1000' </dev/null >/dev/null 2>&1 & echo started");
    assert.equal(r.stdout, 'started\n');
    c.end();
    const nsOf = (pid: number | string): string | undefined => {
      try {
        return fs.readlinkSync(`/proc/${pid}/ns/pid`);
      } catch {
        return undefined;
      }
    };
    const init = host.machine.initPid;
    const ns = nsOf(init);
    assert.ok(ns);
    const inNamespace = (): number[] => fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e) && Number(e) !== init && nsOf(e) === ns).map(Number);
    // The pid namespace's own view: its pid 1 counts, so children appear as other pids.
    let members = inNamespace();
    for (let i = 0; i < 600 && members.length === 0; i++) {
      await new Promise((res) => setTimeout(res, 100));
      members = inNamespace();
    }
    assert.ok(members.length > 0, 'the detached sleep runs inside the demo machine');
    await host.stop();
    assert.equal(nsOf(init), undefined, 'pid 1 of the demo machine is gone');
    assert.deepEqual(inNamespace(), []);
  });
});
