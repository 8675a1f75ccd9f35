/**
 * The test set-ups every suite repeated: a logger that says nothing, a connection pool to a test host that trusts
 * exactly the host's key and answers no prompt (ScriptedPrompter with no answers), a known_hosts file for a test sshd
 * and the proxies in front of it, a one-file checkpoint. A test that wants to see what was
 * logged or asked passes its own logger or prompter in `options`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ConnectionPool, type PoolHost, type PoolOptions } from '../../src/core/ssh/pool';
import { startSshd, type TestSshd } from '../harness/sshd';
import type { Checkpoint } from '../../src/core/types';
import type { Logger } from '../../src/core/ssh/types';
import { ScriptedPrompter } from '../harness/testHost';

/** A logger that drops everything. */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/** A pool for the test host whose known_hosts file is `host.knownHostsFile`; anything in `options` overrides. */
export function testPool(host: { knownHostsFile: string }, options: Partial<PoolOptions> = {}): ConnectionPool {
  return new ConnectionPool({ prompter: new ScriptedPrompter(), logger: silentLogger, knownHostsFiles: [host.knownHostsFile], ...options });
}

/**
 * A known_hosts file in `dir` that trusts the test sshd `s` on its own port and on each of `ports` (proxies in front
 * of it: the same key, another address).
 */
export function knownHostsWithProxies(s: { knownHostsLine: string }, dir: string, ...ports: number[]): string {
  const file = path.join(dir, 'known_hosts');
  const lines = [s.knownHostsLine, ...ports.map((p) => s.knownHostsLine.replace(/^\[127\.0\.0\.1\]:\d+ /, `[127.0.0.1]:${p} `))];
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

/** A checkpoint that is one file at `file` (step `step`), as a listing would give it. */
export function flatCheckpoint(file: string, step: number): Checkpoint {
  return { name: path.basename(file), kind: 'step', step, layout: 'flat', path: file, isDir: false, bytes: 0, mtime: 0, files: [], newest: true };
}

/**
 * The real test sshd logging at DEBUG1 (each direct-tcpip request with its target, so a test can see traffic crossed
 * it), a pool that trusts exactly its key (known_hosts in `dir`) and retries little, and the PoolHost `trainer` for it:
 * what a test of a server reached through a host's SSH link needs.
 */
export async function forwardingHost(dir: string): Promise<{ sshd: TestSshd; pool: ConnectionPool; host: PoolHost }> {
  const sshd = await startSshd({ logLevel: 'DEBUG1' });
  const known = path.join(dir, 'known_hosts');
  fs.writeFileSync(known, `${sshd.knownHostsLine}\n`);
  const pool = testPool({ knownHostsFile: known }, { agent: null, backoffBaseMs: 50, reconnectAttempts: 1, connectTimeoutMs: 5000 });
  const host: PoolHost = { name: 'trainer', jumps: [], target: { alias: 'trainer', hostname: sshd.host, port: sshd.port, user: sshd.user, identityFiles: [sshd.clientKeyPath], identitiesOnly: true } };
  return { sshd, pool, host };
}
