/**
 * Starting a real VS Code for a test: code-server (Node 24) on a free loopback port in its own process group, with a
 * fresh HOME, user-data-dir, extensions-dir and settings under one temp folder, and a headless Debian Chromium with a
 * fresh profile. Shared by the UI sessions and the in-extension-host test route of vscode.ts.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { QUIET_VSCODE_SETTINGS, splitByScope } from '../../src/demo/profile';
import { spawnGroup, stopGroup, type GroupProcess } from './processGroup';
import { findToolchain, REPO_ROOT, type Toolchain } from './toolchain';

/** What to start. */
export interface LaunchOptions {
  /** The folder VS Code opens. */
  workspaceFolder: string;
  /** User settings (`User/settings.json`), merged over quiet defaults (no welcome page, no trust prompt). */
  settings?: Record<string, unknown>;
  /** Environment of code-server and the extension host; `HOME` here replaces the fresh empty one. */
  env?: Record<string, string>;
  /** A `.vsix` to install first, if any. */
  vsix?: string;
  /** More `.vsix` files to install beside it (e.g. a baseline extension for a benchmark). */
  extraVsix?: string[];
  /** More code-server arguments. */
  serverArgs?: string[];
  /** Workspace trust on, the folder not trusted: VS Code's Restricted Mode (default: trust off, all trusted). */
  untrustedWorkspace?: boolean;
  /** Called with the user-data-dir once the settings are written, before code-server starts (e.g. a demo profile). */
  beforeStart?: (userDataDir: string) => void;
}

/** Workspace trust on and never asked at startup: an unknown folder opens in Restricted Mode. */
const RESTRICTED_MODE_SETTINGS = {
  'security.workspace.trust.enabled': true,
  'security.workspace.trust.startupPrompt': 'never',
  'security.workspace.trust.banner': 'never',
};

/** A started server and browser; the page has not navigated yet. */
export interface Launched {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  /** `127.0.0.1:PORT`, the authority of `vscode-remote://` URIs on this server. */
  authority: string;
  root: string;
  home: string;
  page: Page;
  context: BrowserContext;
  server: GroupProcess;
  consoleLines: string[];
  /** All log files VS Code wrote under the user-data-dir, concatenated. */
  vscodeLogs(): string;
  /** Closes the browser, ends the server's process group, removes the temp folder. Idempotent. */
  close(): Promise<void>;
}


const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Starts code-server (healthy) and Chromium (one blank page). Cleans up everything if any step fails. */
export async function launch(opts: LaunchOptions): Promise<Launched> {
  const tools = findToolchain();
  const root = mkdtempSync(path.join(tmpdir(), 'rr-vscode-'));
  const dirs = {
    home: path.join(root, 'home'),
    userData: path.join(root, 'user-data'),
    extensions: path.join(root, 'extensions'),
    browser: path.join(root, 'browser'),
  };
  for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
  mkdirSync(path.join(dirs.userData, 'User'), { recursive: true });
  mkdirSync(path.join(dirs.userData, 'Machine'), { recursive: true });
  // code-server's extension host is a remote one: VS Code reads `machine`-scoped settings there from the remote
  // (Machine) settings only and ignores them in the User file, as in a Remote-SSH window. Each setting goes where
  // a user of that window would have to put it.
  const { user, machine } = splitByScope(opts.settings ?? {}, REPO_ROOT);
  const trust = opts.untrustedWorkspace ? RESTRICTED_MODE_SETTINGS : {};
  writeFileSync(path.join(dirs.userData, 'User', 'settings.json'), JSON.stringify({ ...QUIET_VSCODE_SETTINGS, ...trust, ...user }, null, 2));
  writeFileSync(path.join(dirs.userData, 'Machine', 'settings.json'), JSON.stringify(machine, null, 2));
  opts.beforeStart?.(dirs.userData);
  const config = path.join(root, 'code-server.yaml');
  writeFileSync(config, 'auth: none\ncert: false\n'); // an empty file is a parse error

  // A fresh HOME unless the caller brings one: code-server and the extension (~/.ssh) must never see the real one.
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: dirs.home, ...opts.env };
  for (const k of Object.keys(env)) if (k.startsWith('VSCODE_')) delete env[k]; // a surrounding VS Code's IPC
  const home = env.HOME ?? dirs.home;
  const common = ['--user-data-dir', dirs.userData, '--extensions-dir', dirs.extensions, '--config', config];

  let server: GroupProcess | undefined;
  let context: BrowserContext | undefined;
  let closed: Promise<void> | undefined;
  const cleanup = async (): Promise<void> => {
    const errors: unknown[] = [];
    if (context) await withTimeout(context.close(), 10_000, 'browser close').catch((e: unknown) => errors.push(e));
    if (server) await stopGroup(server).catch((e: unknown) => errors.push(e));
    if (!process.env.RR_KEEP_E2E_TMP) rmSync(root, { recursive: true, force: true });
    if (errors.length) throw errors[0];
  };

  try {
    for (const vsix of [opts.vsix, ...(opts.extraVsix ?? [])]) if (vsix) await installExtension(tools, vsix, common, env);

    const port = await freePort();
    server = spawnGroup(
      tools.node,
      [tools.codeServerEntry, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry',
        '--disable-update-check', ...(opts.untrustedWorkspace ? [] : ['--disable-workspace-trust']), ...common, ...(opts.serverArgs ?? []),
        opts.workspaceFolder],
      { env, cwd: root },
    );
    const url = `http://127.0.0.1:${port}`;
    await waitForHealthy(url, server);

    context = await chromium.launchPersistentContext(dirs.browser, {
      executablePath: tools.chromium,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1400, height: 900 },
    });
    // The workbench page is heavy: on a loaded machine its first load takes well over Playwright's default 30 s.
    context.setDefaultNavigationTimeout(180_000);
    const page = context.pages()[0] ?? (await context.newPage());
    const consoleLines: string[] = [];
    page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
    return {
      url,
      authority: `127.0.0.1:${port}`,
      root,
      home,
      page,
      context,
      server,
      consoleLines,
      vscodeLogs: () => readLogs(path.join(dirs.userData, 'logs')),
      close: () => (closed ??= cleanup()),
    };
  } catch (e) {
    const log = server?.output() ?? '';
    await cleanup().catch(() => undefined);
    if (e instanceof Error && log) e.message += `\n--- code-server log ---\n${log.slice(-4000)}`;
    throw e;
  }
}

/** Installs a `.vsix` with code-server's own CLI into the session's extensions-dir. */
async function installExtension(tools: Toolchain, vsix: string, common: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const args = [tools.codeServerEntry, ...common, '--install-extension', vsix];
  const { stdout, stderr } = await promisify(execFile)(tools.node, args, { env, timeout: 120_000 }).catch(
    (e: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`installing ${vsix} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`);
    },
  );
  if (!/successfully installed/i.test(stdout + stderr)) {
    throw new Error(`installing ${vsix} did not report success:\n${stdout}${stderr}`);
  }
}

/** Polls code-server's `/healthz` until it answers, failing early with its log if it exits. */
async function waitForHealthy(url: string, server: GroupProcess, timeoutMs = 60_000): Promise<void> {
  let exited: number | null | undefined;
  void server.exited.then((code) => (exited = code));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited !== undefined) throw new Error(`code-server exited (code ${exited}) before it was ready`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`code-server not healthy after ${timeoutMs} ms`);
}

/** A TCP port free on 127.0.0.1 right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (addr && typeof addr === 'object' ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

function readLogs(dir: string): string {
  const parts: string[] = [];
  const visit = (p: string): void => {
    let st;
    try {
      st = statSync(p);
    } catch {
      return;
    }
    if (st.isDirectory()) for (const e of readdirSync(p).sort()) visit(path.join(p, e));
    else if (p.endsWith('.log')) parts.push(`--- ${path.relative(dir, p)} ---\n${readFileSync(p, 'utf8')}`);
  };
  visit(dir);
  return parts.join('\n');
}

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
