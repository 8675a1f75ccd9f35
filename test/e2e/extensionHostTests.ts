/**
 * Tests that run inside the extension host of a real VS Code (what `@vscode/test-electron` gives on a desktop),
 * through code-server's smoke-test driver: the workbench is opened with an `extensionDevelopmentPath` and an
 * `extensionTestsPath` payload, VS Code loads the tests module, awaits its `run()`, and reports the outcome to the
 * page's `codeAutomationExit`. The server log says 0 even when tests fail, so that callback is the only verdict.
 */
import { existsSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { build } from 'esbuild';
import { launch, withTimeout } from './launch';
import { REPO_ROOT } from './toolchain';

/** Options of {@link runExtensionHostTests}. */
export interface ExtensionHostTestOptions {
  /** A CommonJS module exporting `run(): Promise<void>` (see {@link bundleExtensionHostTests}). */
  testsIndexPath: string;
  /** The folder VS Code opens. */
  workspaceFolder: string;
  /** The extension under test, loaded as a development extension; default the repository (needs a built `dist/`). */
  extensionDevelopmentPath?: string;
  settings?: Record<string, unknown>;
  env?: Record<string, string>;
  /** Default 180 s. Payload paths VS Code cannot use hang rather than fail, so there is always a limit. */
  timeoutMs?: number;
}

/** The verdict and what the tests logged (`type: args`), in order. */
export interface ExtensionHostTestResult {
  exitCode: number;
  log: string[];
}

/** Runs the tests module inside the extension host of a fresh code-server and returns its exit code and log. */
export async function runExtensionHostTests(opts: ExtensionHostTestOptions): Promise<ExtensionHostTestResult> {
  const devPath = path.resolve(opts.extensionDevelopmentPath ?? REPO_ROOT);
  const main = path.join(devPath, 'dist', 'extension.js');
  if (!existsSync(main)) throw new Error(`${main} is missing: build the extension first (node esbuild.mjs)`);
  const l = await launch({
    workspaceFolder: opts.workspaceFolder,
    settings: opts.settings,
    env: opts.env,
    serverArgs: ['--vscode-option', 'enable-smoke-test-driver'],
  });
  try {
    const log: string[] = [];
    let exit!: (code: number) => void;
    const exited = new Promise<number>((resolve) => (exit = resolve));
    // Both must exist before the workbench loads: it looks them up once.
    await l.page.exposeFunction('codeAutomationExit', (code: number) => exit(code));
    await l.page.exposeFunction('codeAutomationLog', (type: string, args: unknown[]) => {
      log.push(`${type}: ${args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ')}`);
    });
    // Plain file: paths make VS Code look for a local extension host, which a browser has none of: it hangs.
    const remote = (p: string): string => `vscode-remote://${l.authority}${path.resolve(p)}`;
    const payload = JSON.stringify([
      ['extensionDevelopmentPath', remote(devPath)],
      ['extensionTestsPath', remote(opts.testsIndexPath)],
    ]);
    await l.page.goto(`${l.url}/?folder=${encodeURIComponent(opts.workspaceFolder)}&payload=${encodeURIComponent(payload)}`);
    const timeoutMs = opts.timeoutMs ?? 180_000;
    const exitCode = await withTimeout(exited, timeoutMs, 'extension host tests').catch((e: Error) => {
      e.message += `\n--- test log ---\n${log.join('\n').slice(-4000)}\n--- code-server log ---\n${l.server.output().slice(-4000)}`;
      throw e;
    });
    return { exitCode, log };
  } finally {
    await l.close();
  }
}

/**
 * Bundles a TypeScript tests module (with `vscode` external) into `.test-tmp/e2e/host-tests/NAME.js`, which is what
 * the extension host loads. Returns the bundle's path.
 */
export async function bundleExtensionHostTests(entry: string): Promise<string> {
  const outDir = path.join(REPO_ROOT, '.test-tmp', 'e2e', 'host-tests');
  mkdirSync(outDir, { recursive: true });
  const outfile = path.join(outDir, `${path.basename(path.dirname(entry))}-${path.basename(entry, '.ts')}.js`);
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['vscode'],
    sourcemap: 'inline',
    logLevel: 'silent',
  });
  return outfile;
}
