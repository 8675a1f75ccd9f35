/**
 * Secrets never written (issue 8): sessions against the real sshd with a known password, a key passphrase and a
 * keyboard-interactive one-time code, each after a wrong attempt, through the core with the extension's log sink
 * (channelLogger, which also censors) and through the CLI on a pseudo-terminal; then a listing, a download and an
 * eval on each. Afterwards everything written is searched for every secret, right and wrong, in plain, base64 and
 * hex: the log, error messages and their details, the prompts the CLI printed, and every file under the temp
 * HOME, the download folder, the eval state folder and the test host's folder (eval folders, sidecars).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { ConnectionPool, type PoolHost } from '../../src/core/ssh/pool';
import type { Prompter } from '../../src/core/ssh/types';
import { channelLogger } from '../../src/extension/log';
import { runCommand } from '../../src/core/remote';
import { listRunsCommand } from '../../src/core/discovery/listScript';
import { download, planDownload } from '../../src/core/transfer';
import { EvalService } from '../../src/core/eval/service';
import { parseEvalProfile } from '../../src/core/eval/profiles';
import { RemoteRunsError, evalStep, type TargetRef } from '../../src/core/types';
import { startSshd, TEST_USER, type TestSshd } from '../harness/sshd';
import { startTestHost, type TestHost } from '../harness/testHost';

const ROOT = path.join(__dirname, '..', '..');
const CLI = path.join(ROOT, 'dist', 'cli.js');
const HOST: TargetRef = { kind: 'host', id: '' };
const WRONG = { password: 'wrong-pw-Zq81xy', passphrase: 'wrong-phrase-Kx22vw', otp: 'wrong-otp-993311' };

let host: TestHost; // password auth on, plus keys
let pam: TestSshd; // keyboard-interactive through PAM
let home: string; // the temp HOME of the client side (known_hosts written there)
let downloads: string;
let evalState: string;
/** A file touched when the sessions start: files of the test host changed after it were written by them. */
let startMark: string;
const logLines: string[] = [];
const errors: string[] = [];

/** The extension's own log sink over a recording channel (the VS Code LogOutputChannel's three methods). */
const logger = channelLogger({
  info: (m: string) => logLines.push(`info ${m}`),
  warn: (m: string) => logLines.push(`warn ${m}`),
  error: (m: string) => logLines.push(`error ${m}`),
} as unknown as Parameters<typeof channelLogger>[0]);

function secrets(): string[] {
  return [host.sshd.password, host.sshd.passphrase, WRONG.password, WRONG.passphrase, WRONG.otp];
}

/** Every form a secret could take when written: plain, base64 (with and without padding) and hex. */
function forms(secret: string): string[] {
  const b = Buffer.from(secret);
  return [secret, b.toString('base64').replace(/=+$/, ''), b.toString('hex'), JSON.stringify(secret).slice(1, -1)];
}

function leaksIn(text: string | Buffer): string[] {
  const hay = Buffer.isBuffer(text) ? text : Buffer.from(text);
  return secrets().flatMap((s) => forms(s).filter((f) => hay.includes(f)).map((f) => `${s} (as ${JSON.stringify(f)})`));
}

/** Regular files under `dir`; with `newerThan`, only those changed since (the test host's own fixtures are not ours). */
function filesUnder(dir: string, newerThan?: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const out = execFileSync('find', [dir, '-type', 'f', ...(newerThan ? ['-newer', newerThan] : []), '-print0'], { encoding: 'utf8' });
  return out.split('\0').filter(Boolean);
}

/** Leaks in a file of any size, read in chunks that overlap by more than the longest form of a secret. */
function leaksInFile(file: string): string[] {
  const fd = fs.openSync(file, 'r');
  const found = new Set<string>();
  try {
    const chunk = Buffer.alloc(1 << 20);
    let carry = Buffer.alloc(0);
    for (;;) {
      const n = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      const hay = Buffer.concat([carry, chunk.subarray(0, n)]);
      for (const l of leaksIn(hay)) found.add(l);
      carry = hay.subarray(Math.max(0, hay.length - 256));
    }
  } finally {
    fs.closeSync(fd);
  }
  return [...found];
}

/** A prompter that answers wrong first, then right, and records what it was asked (never the answers). */
class TwoTries implements Prompter {
  readonly asked: string[] = [];
  private n = { passphrase: 0, password: 0, kbd: 0 };
  constructor(private readonly right: { passphrase?: string; password?: string; otp?: string }) {}
  async confirmHostKey(): Promise<boolean> {
    this.asked.push('hostKey');
    return true; // appended to the temp HOME's known_hosts: that file is searched too
  }
  async passphrase(): Promise<string | undefined> {
    this.asked.push('passphrase');
    return this.n.passphrase++ === 0 ? WRONG.passphrase : this.right.passphrase;
  }
  async password(): Promise<string | undefined> {
    this.asked.push('password');
    return this.n.password++ === 0 ? WRONG.password : this.right.password;
  }
  async keyboardInteractive(): Promise<string[] | undefined> {
    this.asked.push('kbd');
    return [this.n.kbd++ === 0 ? WRONG.otp : this.right.otp!];
  }
}

async function captured<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (e) {
    errors.push(e instanceof RemoteRunsError ? `${e.kind}: ${e.message} ${JSON.stringify(e.detail)}` : String(e instanceof Error ? e.stack : e));
    return undefined;
  }
}

before(async () => {
  if (!fs.existsSync(CLI)) execFileSync(process.execPath, ['esbuild.mjs'], { cwd: ROOT, stdio: 'ignore' });
  host = await startTestHost({ passwordAuthentication: true });
  pam = await startSshd({ usePam: true, kbdInteractiveAuthentication: true });
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-secrets-home-'));
  downloads = path.join(home, 'downloads');
  evalState = path.join(home, 'eval-state');
  fs.mkdirSync(path.join(home, '.ssh'), { recursive: true, mode: 0o700 });
  fs.mkdirSync(evalState);
  execFileSync('chown', ['-R', `${TEST_USER}:${TEST_USER}`, host.paths.runs]);
  startMark = path.join(os.tmpdir(), `rr-secrets-start-${process.pid}`);
  fs.writeFileSync(startMark, '');
});

after(async () => {
  await host?.stop();
  await pam?.stop();
  if (home) fs.rmSync(home, { recursive: true, force: true });
  if (startMark) fs.rmSync(startMark, { force: true });
});

describe('sessions with secrets', () => {
  const knownHosts = (): string => path.join(home, '.ssh', 'known_hosts');
  const hop = (s: TestSshd, alias: string, identityFiles: string[]) => ({ alias, hostname: s.host, port: s.port, user: s.user, identityFiles, identitiesOnly: true });

  async function session(name: string, prompter: TwoTries, target: PoolHost['target'], expectAsked: string[]): Promise<void> {
    const pool = new ConnectionPool({ prompter, logger, knownHostsFiles: [knownHosts()], agent: null, backoffBaseMs: 50 });
    const poolHost: PoolHost = { name, jumps: [], target };
    try {
      const executor = pool.executor(poolHost, { idempotent: true });
      const listing = await runCommand(executor, HOST, listRunsCommand([host.paths.runs]));
      const story = listing.roots[0].state === 'ok' ? listing.roots[0].runs.find((r) => r.name === 'story') : undefined;
      assert.ok(story, `${name}: the story run is listed`);
      const ck = story.checkpoints[0];
      const plan = await planDownload({ pool, host: poolHost, target: HOST }, ck, { root: downloads, run: `${name}-${story.name}` });
      await download(plan, { verify: 'sha256' });
      const evals = new EvalService({ executorFor: (_n, { idempotent }) => pool.executor(poolHost, { idempotent }), localStateDir: evalState });
      const started = await evals.start(parseEvalProfile({ name: 'probe', command: 'echo "{\\"acc\\": 1}"' }), { host: name, target: HOST, run: { name: story.name, path: story.path }, checkpoint: { path: ck.path, step: evalStep(ck) } });
      const end = await evals.follow(started.place, started.id, started.meta, { pollMs: 100 });
      assert.equal(end.state, 'passed');
      assert.deepEqual(prompter.asked, expectAsked, `${name}: asked ${prompter.asked.join(', ')}`);
    } finally {
      pool.dispose();
    }
  }

  test('password, after a wrong one', { timeout: 180_000 }, async () => {
    await session('pw', new TwoTries({ password: host.sshd.password }), hop(host.sshd, 'pw', []), ['hostKey', 'password', 'password']);
  });

  test('key passphrase, after a wrong one', { timeout: 180_000 }, async () => {
    await session('enc', new TwoTries({ passphrase: host.sshd.passphrase }), hop(host.sshd, 'enc', [host.sshd.encryptedKeyPath]), ['passphrase', 'passphrase']);
  });

  test('keyboard-interactive one-time code, after a wrong one', { timeout: 180_000 }, async () => {
    const prompter = new TwoTries({ otp: pam.password });
    const pool = new ConnectionPool({ prompter, logger, knownHostsFiles: [knownHosts()], agent: null });
    try {
      const r = await pool.exec({ name: 'otp', jumps: [], target: hop(pam, 'otp', []) }, 'echo signed-in');
      assert.equal(r.stdout.toString(), 'signed-in\n');
      assert.ok(prompter.asked.filter((a) => a === 'kbd').length >= 2, `asked ${prompter.asked.join(', ')}`);
    } finally {
      pool.dispose();
    }
  });

  test('only wrong answers: auth-failed, and its message and details hold none of them', { timeout: 180_000 }, async () => {
    const wrongOnly: Prompter = {
      confirmHostKey: async () => true,
      passphrase: async () => WRONG.passphrase,
      password: async () => WRONG.password,
      keyboardInteractive: async () => [WRONG.otp],
    };
    for (const [name, s, ids] of [['bad-pw', host.sshd, []], ['bad-enc', host.sshd, [host.sshd.encryptedKeyPath]], ['bad-otp', pam, []]] as const) {
      const pool = new ConnectionPool({ prompter: wrongOnly, logger, knownHostsFiles: [knownHosts()], agent: null });
      try {
        const r = await captured(pool.exec({ name, jumps: [], target: hop(s, name, [...ids]) }, 'true'));
        assert.equal(r, undefined, `${name} must not sign in`);
        assert.match(errors[errors.length - 1], /^auth-failed: /);
        logger.error(errors[errors.length - 1]); // the command wrapper logs failures the same way
      } finally {
        pool.dispose();
      }
    }
  });

  test('the CLI on a terminal: prompts hide what is typed; a wrong then right passphrase and a wrong password leave no trace', { timeout: 180_000 }, async () => {
    const config = path.join(home, 'cli.json');
    fs.writeFileSync(
      config,
      JSON.stringify({ hosts: [host.hostConfig('enc', { identityFile: host.sshd.encryptedKeyPath, runRoots: [host.paths.runs], targets: ['host'] }), host.hostConfig('pw', { identityFile: path.join(home, 'no-such-key'), runRoots: [host.paths.runs], targets: ['host'] })] }),
    );
    // `script` gives the CLI a real pseudo-terminal; what it prints (prompts, errors, echo) is recorded in `out`.
    // Each answer is typed when its prompt has appeared, as a person would (typed ahead, the terminal itself
    // would echo it before the CLI turns echo off, as with OpenSSH).
    const run = (address: string, prompt: RegExp, typed: string[]): Promise<{ code: number; out: string }> =>
      new Promise((resolve) => {
        const cmd = `${process.execPath} ${CLI} ls ${address} --config ${config} --known-hosts ${host.knownHostsFile}`;
        const child = spawn('script', ['-qefc', cmd, '/dev/null'], { env: { PATH: process.env.PATH, HOME: home, TERM: 'dumb' } });
        let out = '';
        let answered = 0;
        const onData = (d: Buffer): void => {
          out += d.toString();
          const prompts = out.match(new RegExp(prompt.source, 'g'))?.length ?? 0;
          while (answered < prompts && answered < typed.length) child.stdin.write(`${typed[answered++]}\n`);
        };
        child.stdout.on('data', onData);
        child.stderr.on('data', onData);
        const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
        child.on('close', (code) => {
          clearTimeout(timer);
          resolve({ code: code ?? -1, out });
        });
      });
    const enc = await run('enc/host', /Enter passphrase for key/, [WRONG.passphrase, host.sshd.passphrase]);
    fs.writeFileSync(path.join(home, 'cli-enc.out'), enc.out);
    assert.equal(enc.code, 0, enc.out);
    assert.match(enc.out, /Enter passphrase for key/);
    assert.match(enc.out, /story/);
    const pw = await run('pw/host', /password: /, [WRONG.password, WRONG.password, WRONG.password]);
    fs.writeFileSync(path.join(home, 'cli-pw.out'), pw.out);
    assert.equal(pw.code, 2, pw.out);
    assert.match(pw.out, /password:/);
    assert.match(pw.out, /auth-failed|Authentication failed/i);
  });
});

describe('afterwards', () => {
  test('no secret appears in the log, the error messages, or any file written', () => {
    assert.ok(logLines.length > 0, 'the sessions logged something');
    assert.ok(errors.length >= 3, 'the failed attempts produced errors');
    const findings: string[] = [];
    for (const l of logLines) for (const leak of leaksIn(l)) findings.push(`log line ${JSON.stringify(l.slice(0, 120))}: ${leak}`);
    for (const e of errors) for (const leak of leaksIn(e)) findings.push(`error ${JSON.stringify(e.slice(0, 120))}: ${leak}`);
    const written = [...filesUnder(home), ...filesUnder(host.dir, startMark).filter((f) => !f.startsWith(host.sshd.dir))];
    assert.ok(written.some((f) => f.endsWith('known_hosts')), 'the temp HOME got a known_hosts');
    assert.ok(written.some((f) => f.includes('/downloads/')), 'downloads were written');
    assert.ok(written.some((f) => f.endsWith('meta.json')), 'eval folders were written');
    assert.ok(written.some((f) => f.endsWith('cli-enc.out')), 'the CLI transcript is searched too');
    for (const f of written) for (const leak of leaksInFile(f)) findings.push(`${f}: ${leak}`);
    assert.deepEqual(findings, []);
  });
});
