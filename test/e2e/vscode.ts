/**
 * End-to-end harness: the extension's `.vsix` installed into a real VS Code (code-server, run by Node 24) that a
 * headless Debian Chromium drives through playwright-core. Each session has its own HOME, user-data-dir,
 * extensions-dir and browser profile under one temp folder, and `close()` leaves no process behind.
 *
 * Selectors are the ones verified against VS Code 1.139 (see /work/shared/VSCODE_E2E_NOTES.md).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { spawnGroup, stopGroup, type GroupProcess } from './processGroup';
import { findToolchain, REPO_ROOT, type Toolchain } from './toolchain';
import { extensionVsix } from './vsix';

export { extensionVsix } from './vsix';

/** Options of {@link startVSCode}. */
export interface StartOptions {
  /** The folder VS Code opens. */
  workspaceFolder: string;
  /** User settings (`User/settings.json`), merged over quiet defaults (no welcome page, no trust prompt). */
  settings?: Record<string, unknown>;
  /**
   * Environment of code-server and so of the extension host. `HOME` here replaces the session's fresh empty home,
   * e.g. with one holding `.ssh/known_hosts` and keys.
   */
  env?: Record<string, string>;
  /** The extension to install; default: the repository's extension, packaged once per run. `null`: install none. */
  extensionVsix?: string | null;
}

/** A notification toast as shown. */
export interface Notification {
  message: string;
  severity: 'error' | 'warning' | 'info';
}

/** A running VS Code with a browser on it. */
export interface VSCodeSession {
  page: Page;
  context: BrowserContext;
  /** `http://127.0.0.1:PORT` of the server. */
  url: string;
  /** The session's temp folder (HOME unless overridden, user data, extensions, browser profile). */
  root: string;
  /** HOME of code-server and the extension host. */
  home: string;
  /** Opens the activity-bar view container with this title (no-op when already open). */
  openViewContainer(title: string): Promise<void>;
  /** The sidebar pane (header and body) of the view with this name, e.g. "Hosts". */
  view(name: string): Locator;
  /** The sidebar tree item with exactly this accessible name. */
  treeItem(name: string): Locator;
  /** Expands the tree item and waits until it shows expanded. */
  expand(name: string): Promise<void>;
  /** Runs a command by its palette title (e.g. "Remote Runs: Refresh") through F1. */
  runCommand(title: string): Promise<void>;
  /** The notification toasts currently shown. */
  notifications(): Promise<Notification[]>;
  /** Waits for a toast whose message matches, and returns it. */
  waitForNotification(match: RegExp, timeoutMs?: number): Promise<Notification>;
  screenshot(file: string): Promise<void>;
  /** Saves a screenshot, the server log, VS Code's logs and the browser console under `dir`. */
  saveArtifacts(dir: string): Promise<void>;
  /** code-server's stdout and stderr so far. */
  serverLog(): string;
  /** All log files VS Code wrote under the user-data-dir (extension host, output channels), concatenated. */
  vscodeLogs(): string;
  /** Browser console messages so far (`type: text`). */
  consoleMessages(): string[];
  /** Closes the browser and ends code-server's whole process group; removes the temp folder. Idempotent. */
  close(): Promise<void>;
}

/** Quiet defaults: nothing may steal focus or cover the views under test. */
const DEFAULT_SETTINGS: Record<string, unknown> = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'security.workspace.trust.enabled': false,
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'extensions.ignoreRecommendations': true,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'chat.disableAIFeatures': true,
  'chat.commandCenter.enabled': false,
  'window.commandCenter': false,
};

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Starts code-server with the extension installed, opens the workbench in Chromium and waits until it is up. */
export async function startVSCode(opts: StartOptions): Promise<VSCodeSession> {
  const tools = findToolchain();
  const vsix = opts.extensionVsix === undefined ? await extensionVsix() : opts.extensionVsix;

  const root = mkdtempSync(path.join(tmpdir(), 'rr-vscode-'));
  const dirs = {
    home: path.join(root, 'home'),
    userData: path.join(root, 'user-data'),
    extensions: path.join(root, 'extensions'),
    browser: path.join(root, 'browser'),
  };
  for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
  mkdirSync(path.join(dirs.userData, 'User'), { recursive: true });
  writeFileSync(
    path.join(dirs.userData, 'User', 'settings.json'),
    JSON.stringify({ ...DEFAULT_SETTINGS, ...opts.settings }, null, 2),
  );
  const config = path.join(root, 'code-server.yaml');
  writeFileSync(config, 'auth: none\ncert: false\n'); // an empty file is a parse error

  // A fresh HOME unless the caller brings one: code-server and the extension (~/.ssh) must never see the real one.
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: dirs.home, ...opts.env };
  for (const k of Object.keys(env)) if (k.startsWith('VSCODE_')) delete env[k]; // a surrounding VS Code's IPC
  const home = env.HOME ?? dirs.home;
  const common = ['--user-data-dir', dirs.userData, '--extensions-dir', dirs.extensions, '--config', config];

  let server: GroupProcess | undefined;
  let context: BrowserContext | undefined;
  const cleanup = async (): Promise<void> => {
    const errors: unknown[] = [];
    if (context) await withTimeout(context.close(), 10_000, 'browser close').catch((e: unknown) => errors.push(e));
    if (server) await stopGroup(server).catch((e: unknown) => errors.push(e));
    if (!process.env.RR_KEEP_E2E_TMP) rmSync(root, { recursive: true, force: true });
    if (errors.length) throw errors[0];
  };

  try {
    if (vsix) await installExtension(tools, vsix, common, env);

    const port = await freePort();
    server = spawnGroup(
      tools.node,
      [tools.codeServerEntry, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry',
        '--disable-update-check', '--disable-workspace-trust', ...common, opts.workspaceFolder],
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
    const page = context.pages()[0] ?? (await context.newPage());
    const consoleLines: string[] = [];
    page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
    await page.goto(`${url}/?folder=${encodeURIComponent(opts.workspaceFolder)}`);
    await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60_000 });
    // The activity bar is drawn once the extension host has registered contributions; wait for it to be usable.
    await page.locator('.part.activitybar').waitFor({ state: 'visible', timeout: 30_000 });

    const srv = server;
    let closed: Promise<void> | undefined;
    return makeSession({
      page,
      context,
      url,
      root,
      home,
      serverLog: () => srv.output(),
      vscodeLogs: () => readLogs(path.join(dirs.userData, 'logs')),
      consoleMessages: () => [...consoleLines],
      close: () => (closed ??= cleanup()),
    });
  } catch (e) {
    const log = server?.output() ?? '';
    await cleanup().catch(() => undefined);
    if (e instanceof Error && log) e.message += `\n--- code-server log ---\n${log.slice(-4000)}`;
    throw e;
  }
}

/**
 * Runs `fn`; if it throws, saves the session's artifacts (screenshot, logs) under `.test-tmp/e2e/artifacts/NAME`
 * and rethrows with that location in the message, so a CI failure can be diagnosed after the fact.
 */
export async function withArtifactsOnFailure<T>(session: VSCodeSession, name: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    const dir = path.join(REPO_ROOT, '.test-tmp', 'e2e', 'artifacts', name.replace(/[^\w.-]+/g, '_'));
    await session.saveArtifacts(dir).catch(() => undefined);
    if (e instanceof Error) e.message += `\n(artifacts: ${dir})`;
    throw e;
  }
}

type SessionBase = Pick<
  VSCodeSession,
  'page' | 'context' | 'url' | 'root' | 'home' | 'serverLog' | 'vscodeLogs' | 'consoleMessages' | 'close'
>;

function makeSession(base: SessionBase): VSCodeSession {
  const { page } = base;
  const sidebar = page.locator('.part.sidebar');

  const notifications = async (): Promise<Notification[]> => {
    const items = page.locator('.notifications-toasts .notification-toast .notification-list-item');
    const out: Notification[] = [];
    for (const item of await items.all()) {
      const message = (await item.locator('.notification-list-item-message').innerText()).trim();
      const icon = (await item.locator('.notification-list-item-icon').getAttribute('class')) ?? '';
      const severity = icon.includes('codicon-error') ? 'error' : icon.includes('codicon-warning') ? 'warning' : 'info';
      out.push({ message, severity });
    }
    return out;
  };

  return {
    ...base,

    async openViewContainer(title) {
      const iconSelector = `a.action-label[aria-label="${cssString(title)}"]`;
      const icon = page.locator(`.part.activitybar ${iconSelector}`);
      const item = page.locator('.part.activitybar li.action-item', { has: page.locator(iconSelector) });
      await icon.waitFor({ state: 'visible', timeout: 30_000 });
      // Clicking the icon of the open container closes the sidebar: only click when it is not the active one.
      if (!((await item.getAttribute('class')) ?? '').split(/\s+/).includes('checked')) await icon.click();
      await sidebar.locator('.composite.title').filter({ hasText: new RegExp(escapeRegExp(title), 'i') })
        .waitFor({ state: 'visible', timeout: 15_000 });
    },

    view(name) {
      const header = page.locator('.pane-header', { has: page.locator('h3.title', { hasText: new RegExp(`^${escapeRegExp(name)}$`) }) });
      return sidebar.locator('.pane', { has: header });
    },

    treeItem(name) {
      return sidebar.getByRole('treeitem', { name, exact: true });
    },

    async expand(name) {
      const item = sidebar.getByRole('treeitem', { name, exact: true });
      if ((await item.getAttribute('aria-expanded')) !== 'true') await item.click();
      await page.waitForFunction(
        (el) => el?.getAttribute('aria-expanded') === 'true',
        await item.elementHandle(),
        { timeout: 15_000 },
      );
    },

    async runCommand(title) {
      const widget = page.locator('.quick-input-widget');
      await page.keyboard.press('F1');
      const input = widget.locator('.quick-input-box input');
      await input.waitFor({ state: 'visible' });
      await input.fill(`>${title}`);
      // Pick the row whose label is exactly the title (others may contain it, e.g. "… Refresh All").
      const row = widget.locator('.quick-input-list .monaco-list-row')
        .filter({ has: page.locator('.label-name', { hasText: new RegExp(`^${escapeRegExp(title)}$`) }) })
        .first();
      await row.waitFor({ state: 'visible', timeout: 15_000 });
      await row.click();
      await widget.waitFor({ state: 'hidden', timeout: 15_000 });
    },

    notifications,

    async waitForNotification(match, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = (await notifications()).find((n) => match.test(n.message));
        if (found) return found;
        if (Date.now() > deadline) {
          const shown = (await notifications()).map((n) => `${n.severity}: ${n.message}`).join(' | ') || 'none';
          throw new Error(`no notification matching ${match} within ${timeoutMs} ms (shown: ${shown})`);
        }
        await page.waitForTimeout(100);
      }
    },

    async screenshot(file) {
      mkdirSync(path.dirname(file), { recursive: true });
      await page.screenshot({ path: file });
    },

    async saveArtifacts(dir) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'code-server.log'), base.serverLog());
      writeFileSync(path.join(dir, 'vscode-logs.txt'), base.vscodeLogs());
      writeFileSync(path.join(dir, 'browser-console.txt'), base.consoleMessages().join('\n'));
      await page.screenshot({ path: path.join(dir, 'screenshot.png') }).catch(() => undefined);
    },
  };
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

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function cssString(s: string): string {
  return s.replace(/["\\]/g, '\\$&');
}
