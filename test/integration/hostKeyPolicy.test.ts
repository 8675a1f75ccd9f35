/**
 * Host key policy on real sshd (issue 8), the cases ssh.test.ts and the knownHosts unit tests leave out:
 * - hashed known_hosts entries (written by `ssh-keygen -H`) for a server on a non-default port: a match connects
 *   without asking, a hashed entry with another key is a mismatch naming file and line;
 * - non-default ports: a key on record for port 22 or for another port never vouches for this port (asks; "no"
 *   refuses), and a key accepted for this port is written as `[host]:port`;
 * - jump hosts: the target's changed key behind a trusted jump is refused naming the target (hop 2), not the jump;
 *   an unknown target key behind a jump is asked for with the target's own name and port and appended for the
 *   target only; hashed entries work for both hops.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startJumpPair, startSshd, type TestSshd } from '../harness/sshd';
import { SshConnection } from '../../src/core/ssh/connection';
import type { HostKeyInfo, Logger, Prompter, ResolvedHop } from '../../src/core/ssh/types';
import { rejectsWith } from '../harness/assertKind';
import { silentLogger } from '../builders/pool';

const home = mkdtempSync(path.join(tmpdir(), 'rr-hostkeys-'));
after(() => rmSync(home, { recursive: true, force: true }));
const quiet: Logger = silentLogger;

class KeyPrompter implements Prompter {
  readonly asked: HostKeyInfo[] = [];
  constructor(private readonly trust: boolean) {}
  async confirmHostKey(info: HostKeyInfo): Promise<boolean> {
    this.asked.push(info);
    return this.trust;
  }
  async passphrase(): Promise<undefined> {
    return undefined;
  }
  async password(): Promise<undefined> {
    return undefined;
  }
  async keyboardInteractive(): Promise<undefined> {
    return undefined;
  }
}

const hop = (s: TestSshd, alias: string): ResolvedHop => ({ alias, hostname: s.host, port: s.port, user: s.user, identityFiles: [s.clientKeyPath], identitiesOnly: true });

let n = 0;
function knownHostsFile(lines: string[], hashed = false): string {
  const p = path.join(home, `kh${n++}`);
  writeFileSync(p, lines.map((l) => `${l}\n`).join(''));
  if (hashed) {
    execFileSync('ssh-keygen', ['-H', '-f', p], { stdio: 'ignore' });
    rmSync(`${p}.old`, { force: true });
    assert.doesNotMatch(readFileSync(p, 'utf8'), /127\.0\.0\.1/, 'ssh-keygen hashed every name');
  }
  return p;
}

function otherKey(): string {
  const k = path.join(home, `other${n++}`);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', k]);
  return readFileSync(`${k}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ');
}

async function connect(hops: { jumps: ResolvedHop[]; target: ResolvedHop }, kh: string, prompter: KeyPrompter): Promise<void> {
  const c = await SshConnection.connect(hops, { prompter, logger: quiet, knownHostsFiles: [kh], agent: null });
  try {
    assert.equal((await c.exec('echo in')).stdout.toString(), 'in\n');
  } finally {
    c.close();
  }
}

describe('hashed entries and non-default ports', () => {
  let s: TestSshd;
  before(async () => {
    s = await startSshd();
    assert.notEqual(s.port, 22);
  });
  after(() => s.stop());

  test('a hashed [host]:port entry matches: connects without asking', async () => {
    const prompter = new KeyPrompter(false);
    await connect({ jumps: [], target: hop(s, 'box') }, knownHostsFile([s.knownHostsLine], true), prompter);
    assert.deepEqual(prompter.asked, []);
  });

  test('a hashed entry holding another key is a mismatch, naming the file and line, never asked', async () => {
    const kh = knownHostsFile(['elsewhere ' + otherKey(), `[127.0.0.1]:${s.port} ${otherKey()}`], true);
    const prompter = new KeyPrompter(true);
    const e = await rejectsWith(SshConnection.connect({ jumps: [], target: hop(s, 'box') }, { prompter, logger: quiet, knownHostsFiles: [kh], agent: null }), 'host-key-mismatch');
    assert.equal(e.detail.file, kh);
    assert.equal(e.detail.line, 2);
    assert.deepEqual(prompter.asked, []);
  });

  test('the key on record for port 22, or for another port, does not vouch for this port: asked, and "no" refuses', async () => {
    const [, type, b64] = s.knownHostsLine.split(' ');
    for (const line of [`127.0.0.1 ${type} ${b64}`, `[127.0.0.1]:${s.port + 1} ${type} ${b64}`]) {
      for (const hashed of [false, true]) {
        const kh = knownHostsFile([line], hashed);
        const before = readFileSync(kh, 'utf8');
        const prompter = new KeyPrompter(false);
        await rejectsWith(SshConnection.connect({ jumps: [], target: hop(s, 'box') }, { prompter, logger: quiet, knownHostsFiles: [kh], agent: null }), 'host-key-unknown');
        assert.deepEqual(prompter.asked.map((i) => i.hostPattern), [`[127.0.0.1]:${s.port}`], `${line} (hashed: ${hashed})`);
        assert.equal(readFileSync(kh, 'utf8'), before, 'nothing written after "no"');
      }
    }
  });

  test('a key accepted for a non-default port is written as [host]:port and then matches (next to hashed lines)', async () => {
    const kh = knownHostsFile([`somewhere ${otherKey()}`], true);
    const first = new KeyPrompter(true);
    await connect({ jumps: [], target: hop(s, 'box') }, kh, first);
    assert.equal(first.asked.length, 1);
    assert.ok(readFileSync(kh, 'utf8').endsWith(`\n${s.knownHostsLine}\n`), readFileSync(kh, 'utf8'));
    const second = new KeyPrompter(false);
    await connect({ jumps: [], target: hop(s, 'box') }, kh, second);
    assert.deepEqual(second.asked, []);
  });
});

describe('jump hosts', () => {
  let pair: Awaited<ReturnType<typeof startJumpPair>>;
  before(async () => {
    pair = await startJumpPair();
  });
  after(() => pair.stop());

  test('both hops known through hashed entries: connects without asking', async () => {
    const prompter = new KeyPrompter(false);
    await connect({ jumps: [hop(pair.jump, 'bastion')], target: hop(pair.target, 'behind') }, knownHostsFile([pair.jump.knownHostsLine, pair.target.knownHostsLine], true), prompter);
    assert.deepEqual(prompter.asked, []);
  });

  test("the target's changed key behind a trusted jump is refused, naming the target's hop, file and line", async () => {
    const kh = knownHostsFile([pair.jump.knownHostsLine, `[127.0.0.1]:${pair.target.port} ${otherKey()}`]);
    const prompter = new KeyPrompter(true);
    const e = await rejectsWith(
      SshConnection.connect({ jumps: [hop(pair.jump, 'bastion')], target: hop(pair.target, 'behind') }, { prompter, logger: quiet, knownHostsFiles: [kh], agent: null }),
      'host-key-mismatch',
    );
    assert.equal(e.detail.line, 2);
    assert.equal(e.detail.file, kh);
    assert.match(e.message, /behind/);
    assert.doesNotMatch(e.message, /jump host bastion/);
    assert.deepEqual(prompter.asked, []);
  });

  test("an unknown target key behind a jump is asked for with the target's name and port, and appended for the target only", async () => {
    const kh = knownHostsFile([pair.jump.knownHostsLine]);
    const prompter = new KeyPrompter(true);
    await connect({ jumps: [hop(pair.jump, 'bastion')], target: hop(pair.target, 'behind') }, kh, prompter);
    assert.deepEqual(prompter.asked.map((i) => [i.hostPattern, i.port]), [[`[127.0.0.1]:${pair.target.port}`, pair.target.port]]);
    assert.equal(readFileSync(kh, 'utf8'), `${pair.jump.knownHostsLine}\n${pair.target.knownHostsLine}\n`);
  });
});
