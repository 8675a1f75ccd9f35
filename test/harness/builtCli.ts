/**
 * The built CLI (`dist/cli.js`, what users run) as the integration tests run it: no terminal (stdin is empty, so
 * nothing can be asked), the test host's client home, nothing else of this machine's environment but PATH.
 */
import { execFileSync, spawnSync } from 'node:child_process';
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
