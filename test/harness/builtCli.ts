/**
 * The built CLI (`dist/cli.js`, what users run) as the integration tests run it: no terminal (stdin is empty, so
 * nothing can be asked), the test host's client home, nothing else of this machine's environment but PATH.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export const ROOT = path.join(__dirname, '..', '..');
export const CLI = path.join(ROOT, 'dist', 'cli.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Build the bundle once if a test run starts without it. */
export function ensureBuiltCli(): void {
  if (!fs.existsSync(CLI)) execFileSync(process.execPath, ['esbuild.mjs'], { cwd: ROOT, stdio: 'ignore' });
}

export function runBuiltCli(args: string[], home: string, timeoutMs = 120_000): CliResult {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: home },
    input: '',
    timeout: timeoutMs,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/**
 * The built CLI run asynchronously (for servers that live in this process and must keep answering while it runs:
 * the demo host, the test Kubernetes API server), with only PATH and HOME of this machine's environment (and `env`).
 * `json` is the parsed stdout, or undefined when it is not JSON.
 */
export async function runBuiltCliAsync(args: string[], home: string, env: NodeJS.ProcessEnv = {}): Promise<CliResult & { json: any }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH, HOME: home, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch {
    json = undefined;
  }
  return { code, stdout, stderr, json };
}

/**
 * The built CLI against a demo host started in this process, asynchronously (the demo server lives here and must
 * keep answering while the CLI runs), with `--json` and the demo's own config and known_hosts. `json` is the parsed
 * stdout, or undefined when it is not JSON.
 */
export async function runDemoCli(
  paths: { cliConfig: string; knownHosts: string },
  home: string,
  args: string[],
): Promise<CliResult & { json: any }> {
  return runBuiltCliAsync([...args, '--json', '--config', paths.cliConfig, '--known-hosts', paths.knownHosts], home);
}
