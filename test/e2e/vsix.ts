/**
 * The extension as users install it: a `.vsix` packaged by vsce (which runs `vscode:prepublish`, the production
 * esbuild). Built at most once per test run: `REMOTE_RUNS_VSIX` names a prebuilt one (test/run-all.sh sets it), and a
 * cached build is reused while no source is newer than it. Every package made here is checked to hold only what
 * runs (see {@link vsixProblems}); `npm run package` runs the same check (`--check`) and prints the size.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { inflateRawSync } from 'node:zlib';
import { REPO_ROOT } from './toolchain';

const CACHE_DIR = path.join(REPO_ROOT, '.test-tmp', 'e2e');
const CACHED_VSIX = path.join(CACHE_DIR, 'remote-runs.vsix');
/** Everything that goes into the package; a change to any of these makes the cached build stale. */
const INPUTS = ['src', 'media', 'package.json', 'esbuild.mjs', 'README.md', 'CHANGELOG.md', '.vscodeignore', 'LICENSE'];

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
  const problems = vsixProblems(listVsix(partial));
  if (problems.length) {
    rmSync(partial, { force: true });
    throw new Error(`the package holds what does not run:\n  ${problems.join('\n  ')}`);
  }
  renameSync(partial, out); // atomic: a reader never sees half a package
}

/** One file in a `.vsix` (a zip): its path in the archive and its uncompressed size. */
export interface VsixEntry {
  name: string;
  bytes: number;
  /** Where its local header starts, and how it is stored (0 stored, 8 deflated), for {@link readVsixFile}. */
  offset: number;
  method: number;
  compressedBytes: number;
}

/** The files of a `.vsix`, read from the zip's central directory (no unzip tool needed). */
export function listVsix(file: string): VsixEntry[] {
  const zip = readFileSync(file);
  // The end-of-central-directory record sits in the last 64 KiB + 22 bytes (its comment is at most 64 KiB).
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 65_557); i--) {
    if (zip.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error(`${file} is not a zip archive`);
  const count = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  const entries: VsixEntry[] = [];
  for (let n = 0; n < count; n++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error(`${file}: bad central directory entry ${n}`);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    entries.push({
      name: zip.toString('utf8', at + 46, at + 46 + nameLength),
      bytes: zip.readUInt32LE(at + 24),
      compressedBytes: zip.readUInt32LE(at + 20),
      method: zip.readUInt16LE(at + 10),
      offset: zip.readUInt32LE(at + 42),
    });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/** The content of one file of a `.vsix`. */
export function readVsixFile(file: string, name: string): Buffer {
  const entry = listVsix(file).find((e) => e.name === name);
  if (!entry) throw new Error(`${file} has no ${name}`);
  const zip = readFileSync(file);
  const start = entry.offset + 30 + zip.readUInt16LE(entry.offset + 26) + zip.readUInt16LE(entry.offset + 28);
  const data = zip.subarray(start, start + entry.compressedBytes);
  if (entry.method === 0) return Buffer.from(data);
  if (entry.method === 8) return inflateRawSync(data);
  throw new Error(`${name}: zip method ${entry.method} not supported`);
}

/**
 * What a package may hold: vsce's own two files, the manifest, readme, changelog, licence, the bundles and the
 * icons/styles. No other document: docs/, CONTRIBUTING.md and bench/ are for the repository's readers.
 */
const ALLOWED: RegExp[] = [
  /^extension\.vsixmanifest$/,
  /^\[Content_Types\]\.xml$/,
  /^extension\/package\.json$/,
  /^extension\/(readme|changelog)\.md$/i,
  /^extension\/LICENSE(\.txt|\.md)?$/i,
  /^extension\/dist\/[\w.-]+\.js$/,
  /^extension\/media\/[\w.-]+\.(svg|css|png)$/,
];

/** The bundles the extension cannot run without, and the documents the Marketplace page shows (readme, changelog, licence). */
const REQUIRED = ['extension/package.json', 'extension/dist/extension.js', 'extension/dist/webview.js', 'extension/dist/cli.js', 'extension/readme.md', 'extension/changelog.md', 'extension/LICENSE.txt'];

/**
 * Why a package holds more (or less) than what runs: tests, sources, source maps, dependencies or dev tooling,
 * pictures for the README, documents other than readme, changelog and licence, anything else not on the allowed
 * list; or a bundle or one of those documents missing. Empty when it is right.
 */
export function vsixProblems(entries: readonly VsixEntry[]): string[] {
  const problems: string[] = [];
  for (const { name } of entries) {
    if (!ALLOWED.some((re) => re.test(name))) problems.push(`${name}: not something the extension runs`);
  }
  const names = new Set(entries.map((e) => e.name));
  for (const required of REQUIRED) if (!names.has(required)) problems.push(`${required}: missing`);
  return problems;
}

/** `remote-runs.vsix: 1.21 MB in 10 files` and one line per file, largest first. */
export function describeVsix(file: string, entries: readonly VsixEntry[]): string {
  const size = statSync(file).size;
  const lines = [...entries]
    .sort((a, b) => b.bytes - a.bytes)
    .map((e) => `  ${formatBytes(e.bytes).padStart(9)}  ${e.name}`);
  const total = entries.reduce((sum, e) => sum + e.bytes, 0);
  return [`${path.relative(process.cwd(), file) || file}: ${formatBytes(size)} (${formatBytes(total)} unpacked) in ${entries.length} files`, ...lines].join('\n');
}

function formatBytes(n: number): string {
  return n >= 1_000_000 ? `${(n / 1_000_000).toFixed(2)} MB` : `${(n / 1000).toFixed(1)} kB`;
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

// `node --import tsx test/e2e/vsix.ts OUT` packages once for a whole test run;
// `node --import tsx test/e2e/vsix.ts --check FILE` (the end of `npm run package`) prints the size and contents and
// fails when the package holds anything that does not run.
if (require.main === module && process.argv[2] === '--check') {
  const file = path.resolve(process.argv[3] ?? path.join(REPO_ROOT, 'dist', 'remote-runs.vsix'));
  const entries = listVsix(file);
  console.log(describeVsix(file, entries));
  const problems = vsixProblems(entries);
  if (problems.length) {
    console.error(`The package holds what does not run:\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
} else if (require.main === module) {
  const out = path.resolve(process.argv[2] ?? CACHED_VSIX);
  packageVsix(out).then(
    () => console.log(out),
    (e: Error) => {
      console.error(e.message);
      process.exit(1);
    },
  );
}
