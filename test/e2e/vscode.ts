/**
 * End-to-end harness: the extension's `.vsix` installed into a real VS Code (code-server, run by Node 24) that a
 * headless Debian Chromium drives through playwright-core. Each session has its own HOME, user-data-dir,
 * extensions-dir and browser profile under one temp folder, and `close()` leaves no process behind.
 *
 * Selectors are the ones verified against VS Code 1.139 (see /work/shared/VSCODE_E2E_NOTES.md).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { launch } from './launch';
import { REPO_ROOT } from './toolchain';
import { extensionVsix } from './vsix';
import { act, commandIdOf, commandRuns, escapeRegExp, quickInputState } from './ui';

export { extensionVsix } from './vsix';
export {
  bundleExtensionHostTests,
  runExtensionHostTests,
  type ExtensionHostTestOptions,
  type ExtensionHostTestResult,
} from './extensionHostTests';

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
  /** Open the folder in Restricted Mode (workspace trust on, the folder not trusted). */
  untrustedWorkspace?: boolean;
  /** Called with the user-data-dir once the settings are written, before code-server starts (e.g. a demo profile). */
  beforeStart?: (userDataDir: string) => void;
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
  /**
   * Runs a command by its palette title (e.g. "Remote Runs: Refresh") through F1; for our own commands, done once
   * the extension logged it (a pick that missed is made again).
   */
  runCommand(title: string): Promise<void>;
  /** Developer: Reload Window, then waits until the new window's workbench is up. */
  reloadWindow(): Promise<void>;
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

/** Starts code-server with the extension installed, opens the workbench in Chromium and waits until it is up. */
export async function startVSCode(opts: StartOptions): Promise<VSCodeSession> {
  const vsix = opts.extensionVsix === undefined ? await extensionVsix() : opts.extensionVsix;
  const l = await launch({ workspaceFolder: opts.workspaceFolder, settings: opts.settings, env: opts.env, vsix: vsix ?? undefined, untrustedWorkspace: opts.untrustedWorkspace, beforeStart: opts.beforeStart });
  try {
    await l.page.goto(`${l.url}/?folder=${encodeURIComponent(opts.workspaceFolder)}`);
    await l.page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60_000 });
    await l.page.locator('.part.activitybar').waitFor({ state: 'visible', timeout: 30_000 });
  } catch (e) {
    if (e instanceof Error) e.message += `\n--- code-server log ---\n${l.server.output().slice(-4000)}`;
    await l.close().catch(() => undefined);
    throw e;
  }
  return makeSession({
    page: l.page,
    context: l.context,
    url: l.url,
    root: l.root,
    home: l.home,
    serverLog: () => l.server.output(),
    vscodeLogs: l.vscodeLogs,
    consoleMessages: () => [...l.consoleLines],
    close: l.close,
  });
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
    // One snapshot inside the page: read toast by toast, one that hid in between (toasts hide on their own, and
    // more often when a test shows several) left the next read waiting 30 s for an element that was gone.
    const items = page.locator('.notifications-toasts .notification-toast .notification-list-item');
    const raw = await items.evaluateAll((els) =>
      els.map((el) => ({
        message: ((el.querySelector('.notification-list-item-message') as HTMLElement | null)?.innerText ?? '').trim(),
        icon: el.querySelector('.notification-list-item-icon')?.getAttribute('class') ?? '',
      })),
    );
    return raw.map(({ message, icon }) => ({
      message,
      severity: icon.includes('codicon-error') ? 'error' : icon.includes('codicon-warning') ? 'warning' : 'info',
    }));
  };

  const session: VSCodeSession = {
    ...base,

    async openViewContainer(title) {
      const iconSelector = `a.action-label[aria-label="${cssString(title)}"]`;
      const icon = page.locator(`.part.activitybar ${iconSelector}`);
      const item = page.locator('.part.activitybar li.action-item', { has: page.locator(iconSelector) });
      const heading = sidebar.locator('.composite.title').filter({ hasText: new RegExp(escapeRegExp(title), 'i') });
      // The icon appears once the extension's contributions are registered: on a loaded machine, well after the
      // workbench (and after a reload, the old window's icon may still be on screen for a moment).
      await icon.waitFor({ state: 'visible', timeout: 120_000 });
      await act(page, {
        what: `the ${title} view container open in the sidebar`,
        action: async () => {
          // Clicking the icon of the open container closes the sidebar: only click when it is not the active one.
          if (!((await item.getAttribute('class')) ?? '').split(/\s+/).includes('checked')) await icon.click();
        },
        effect: () => heading.isVisible(),
        describe: async () => `icon classes: ${await item.getAttribute('class')}`,
      });
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
      await item.waitFor({ state: 'visible', timeout: 60_000 });
      const expanded = async (): Promise<boolean> => (await item.getAttribute('aria-expanded', { timeout: 5_000 })) === 'true';
      await act(page, {
        what: `the tree item ${name} expanded`,
        action: async () => {
          if (!(await expanded())) await item.click();
        },
        effect: expanded,
      });
    },

    async runCommand(title) {
      const widget = page.locator('.quick-input-widget');
      const input = widget.locator('.quick-input-box input');
      // Pick the row whose label is exactly the title (others may contain it, e.g. "… Refresh All").
      const row = widget.locator('.quick-input-list .monaco-list-row')
        .filter({ has: page.locator('.label-name', { hasText: new RegExp(`^${escapeRegExp(title)}$`) }) })
        .first();
      const id = commandIdOf(title);
      const before = id ? commandRuns(session, id) : 0;
      // The palette is done when it closed, or when the command reused it for its own input or pick (Add Host,
      // Download Checkpoint…): then it no longer holds the palette's `>` text. For our own commands the log says
      // when the command ran, and a palette that closed without running it (a click that missed) is opened again.
      const paletteDone = async (): Promise<boolean> => {
        const q = await quickInputState(page);
        return !q.visible || !q.value.startsWith('>');
      };
      const ran = (): boolean => (id ? commandRuns(session, id) > before : true);
      let tries = 0;
      await act(page, {
        what: `${title} run from the palette`,
        action: async () => {
          // A retry only when the first try visibly did not take (never a second run of a command that ran).
          if (tries++ > 0 && ran() && (await paletteDone())) return;
          const q = await quickInputState(page);
          if (!q.visible || !q.value.startsWith('>')) {
            await page.keyboard.press('F1');
            // F1 with a webview focused (an eval table, a card just revealed) can be lost before the page forwards
            // keys to the workbench: then focus the workbench's status bar and press it again.
            const shown = await input.waitFor({ state: 'visible', timeout: 10_000 }).then(() => true, () => false);
            if (!shown) {
              // The status bar's middle holds no item (its items sit at either end): a click there only moves focus.
              const bar = page.locator('.part.statusbar');
              const box = await bar.boundingBox();
              if (box) await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
              await page.keyboard.press('F1');
              await input.waitFor({ state: 'visible', timeout: 30_000 });
            }
          }
          await input.fill(`>${title}`);
          await row.waitFor({ state: 'visible', timeout: 30_000 });
          await row.click();
        },
        effect: async () => (await paletteDone()) && ran(),
        describe: async () => `palette ${JSON.stringify(await quickInputState(page))}; command ${id ?? '(not ours)'} logged ${id ? commandRuns(session, id) - before : '?'} time(s)`,
      });
    },

    async reloadWindow() {
      // Mark this document: the reload is done when a new document (without the mark) shows a workbench. The command
      // is given again if the old document is still there after a minute (a palette pick that did not take).
      const isOld = (): Promise<boolean> => page.evaluate(() => (window as unknown as { __rrBeforeReload?: boolean }).__rrBeforeReload === true);
      await page.evaluate(() => ((window as unknown as { __rrBeforeReload?: boolean }).__rrBeforeReload = true));
      await act(page, {
        what: 'the window reloaded (Developer: Reload Window)',
        action: async () => {
          if (await isOld().catch(() => false)) await session.runCommand('Developer: Reload Window');
        },
        effect: async () => !(await isOld()) && (await page.locator('.monaco-workbench .part.activitybar').isVisible()),
        retryAfterMs: 60_000,
        limitMs: 180_000,
      });
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
  return session;
}

function cssString(s: string): string {
  return s.replace(/["\\]/g, '\\$&');
}
