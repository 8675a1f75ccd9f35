/**
 * Small helpers shared by benchmarks: statistics, timing an OpenSSH client run, a ControlMaster for the
 * multiplexed baseline, counting what sshd saw, heap figures after a real GC, and a plain-text table.
 * Nothing here asserts timing: benches report, they do not judge.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';

export interface Stats {
  n: number;
  median: number;
  min: number;
  max: number;
}

/** Median, min and max of a sample (milliseconds in, milliseconds out). */
export function stats(samples: readonly number[]): Stats {
  if (samples.length === 0) return { n: 0, median: NaN, min: NaN, max: NaN };
  const s = [...samples].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  const median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  return { n: s.length, median, min: s[0], max: s[s.length - 1] };
}

/** Wall time of an async function, in milliseconds, with its result. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

export interface SshRun {
  ms: number;
  code: number | null;
  stdoutBytes: number;
  stderr: string;
}

/**
 * Run the OpenSSH client once (a fresh `ssh` process, as a user would type it) and time it from spawn to exit.
 * stdout is counted, not kept, so a big listing costs the bench no memory.
 */
export function runSsh(args: readonly string[]): Promise<SshRun> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn('ssh', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdoutBytes = 0;
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdoutBytes += b.length));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (s: string) => (stderr += s));
    child.once('error', reject);
    child.once('close', (code) => resolve({ ms: performance.now() - t0, code, stdoutBytes, stderr }));
  });
}

/** A persistent OpenSSH ControlMaster (`ssh -M -N`), for the multiplexed baseline. */
export interface ControlMaster {
  /** Options that make an `ssh` run go through this master. */
  clientArgs: string[];
  stop(): Promise<void>;
}

/**
 * Start `ssh -M -N` on `controlPath` with `baseArgs` (config, keys, known_hosts) to `destination`, and wait
 * until `ssh -O check` answers. The master opens no session (-N): it costs sshd one login and nothing else.
 */
export async function startControlMaster(baseArgs: readonly string[], destination: string, controlPath: string): Promise<ControlMaster> {
  const master: ChildProcess = spawn('ssh', [...baseArgs, '-M', '-N', '-o', `ControlPath=${controlPath}`, '-o', 'ControlPersist=no', destination], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let masterErr = '';
  master.stderr!.setEncoding('utf8');
  master.stderr!.on('data', (s: string) => (masterErr += s));
  const exited = new Promise<void>((r) => master.once('exit', () => r()));
  const stop = async (): Promise<void> => {
    if (master.exitCode !== null || master.signalCode !== null) return;
    await runSsh([...baseArgs, '-o', `ControlPath=${controlPath}`, '-O', 'exit', destination]).catch(() => undefined);
    const timer = setTimeout(() => master.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (master.exitCode !== null) throw new Error(`ssh ControlMaster exited (${master.exitCode}): ${masterErr.trim()}`);
    const check = await runSsh([...baseArgs, '-o', `ControlPath=${controlPath}`, '-O', 'check', destination]);
    if (check.code === 0) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`ssh ControlMaster did not come up within 10 s: ${masterErr.trim() || check.stderr.trim()}`);
    }
    await sleep(50);
  }
  return { clientArgs: ['-o', `ControlPath=${controlPath}`, '-o', 'ControlMaster=no'], stop };
}

/** Sessions sshd started (one per exec request; `LogLevel VERBOSE` logs "Starting session: command …"). */
export function sessionsInLog(log: string): number {
  return (log.match(/Starting session: command /g) ?? []).length;
}

/**
 * Wait until a growing log has been quiet for `quietMs` (sshd writes its lines asynchronously, so a count read
 * right after a command returns may miss the last line), at most `maxMs`.
 */
export async function settledLog(read: () => string, quietMs = 150, maxMs = 2000): Promise<string> {
  const deadline = Date.now() + maxMs;
  let last = read();
  for (;;) {
    await sleep(quietMs);
    const now = read();
    if (now.length === last.length || Date.now() > deadline) return now;
    last = now;
  }
}

let gcFn: (() => void) | undefined;

/** Heap in use after a full GC (enables `gc` at run time, so the bench needs no --expose-gc flag). */
export function heapAfterGc(): number {
  if (!gcFn) {
    v8.setFlagsFromString('--expose-gc');
    gcFn = vm.runInNewContext('gc') as () => void;
  }
  gcFn();
  gcFn();
  return process.memoryUsage().heapUsed;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Milliseconds with one decimal. */
export function ms(x: number): string {
  return Number.isFinite(x) ? x.toFixed(1) : '-';
}

export function mib(bytes: number): string {
  return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}

/** A left-aligned plain-text table with a header rule. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}
