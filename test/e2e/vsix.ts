/**
 * The extension as users install it: a `.vsix` packaged by vsce (which runs `vscode:prepublish`, the production
 * esbuild). Built at most once per test run: `REMOTE_RUNS_VSIX` names a prebuilt one (test/run-all.sh sets it), and a
 * cached build is reused while no source is newer than it.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './toolchain';

const CACHE_DIR = path.join(REPO_ROOT, '.test-tmp', 'e2e');
const CACHED_VSIX = path.join(CACHE_DIR, 'remote-runs.vsix');
/** Everything that goes into the package; a change to any of these makes the cached build stale. */
const INPUTS = ['src', 'media', 'package.json', 'esbuild.mjs', 'README.md', '.vscodeignore', 'LICENSE'];

let building: Promise<string> | undefined;

/** Path of an up-to-date `.vsix` of the extension, building it if needed (once per process). */
export function extensionVsix(): Promise<string> {
  const prebuilt = process.env.REMOTE_RUNS_VSIX;
  if (prebuilt) {
    if (!existsSync(prebuilt)) return Promise.reject(new Error(`REMOTE_RUNS_VSIX=${prebuilt} does not exist`));
    return Promise.resolve(path.resolve(prebuilt));
  }
  building ??= build();
  return building;
}

/** Packages the extension to `out` with vsce; shared by the harness and test/run-all.sh (via `--build-vsix`). */
export async function packageVsix(out: string): Promise<void> {
  mkdirSync(path.dirname(out), { recursive: true });
  const partial = `${out}.${process.pid}.partial.vsix`;
  const vsce = path.join(REPO_ROOT, 'node_modules', '.bin', 'vsce');
  // The packaging of `npm run package`, to a file of our own. The base URLs only let vsce rewrite the README's
  // relative image links when it cannot derive them from package.json's repository; the tests never show them.
  const args = ['package', '--no-dependencies', '--baseContentUrl', 'https://example.invalid/',
    '--baseImagesUrl', 'https://example.invalid/', '-o', partial];
  try {
    await promisify(execFile)(vsce, args, { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024 });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`vsce package failed: ${err.message}\n${err.stdout ?? ''}\n${err.stderr ?? ''}`);
  }
  renameSync(partial, out); // atomic: a reader never sees half a package
}

async function build(): Promise<string> {
  if (existsSync(CACHED_VSIX) && statSync(CACHED_VSIX).mtimeMs > newestInput()) return CACHED_VSIX;
  await packageVsix(CACHED_VSIX);
  return CACHED_VSIX;
}

function newestInput(): number {
  let newest = 0;
  const visit = (p: string): void => {
    if (!existsSync(p)) return;
    const st = statSync(p);
    newest = Math.max(newest, st.mtimeMs);
    if (st.isDirectory()) for (const e of readdirSync(p)) visit(path.join(p, e));
  };
  for (const input of INPUTS) visit(path.join(REPO_ROOT, input));
  return newest;
}

// `node --import tsx test/e2e/vsix.ts OUT` packages once for a whole test run.
if (require.main === module) {
  const out = path.resolve(process.argv[2] ?? CACHED_VSIX);
  packageVsix(out).then(
    () => console.log(out),
    (e: Error) => {
      console.error(e.message);
      process.exit(1);
    },
  );
}
