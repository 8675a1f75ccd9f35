/**
 * Sidebar tree rows by their label, for the end-to-end tests: find, read, expand, and pick from a row's context
 * menu. Labels are matched exactly (`step_100` never matches `step_1000`). Each step waits for its effect and does
 * the action once more when the effect does not come (see ui.ts): a row expanded, a menu closed with its command
 * run.
 */
import type { Locator } from 'playwright-core';
import { act, commandIdOf, commandRuns, exactly, until } from './ui';
import type { VSCodeSession } from './vscode';

/** Which of several rows with the same label (a `host` under each host): the first, the last, or the n-th (0-based). */
export type Which = 'first' | 'last' | number;

const ROWS = '.part.sidebar .monaco-list-row[role=treeitem]';

/** The sidebar tree row whose label is exactly `label` (the first of several, unless `which` says otherwise). */
export function treeRow(session: VSCodeSession, label: string, which: Which = 'first'): Locator {
  const rows = session.page.locator(ROWS).filter({ has: session.page.locator('.label-name', { hasText: exactly(label) }) });
  return which === 'first' ? rows.first() : which === 'last' ? rows.last() : rows.nth(which);
}

/** Labels of the visible tree rows, in order. */
export async function rowLabels(session: VSCodeSession): Promise<string[]> {
  return session.page.locator(`${ROWS} .label-name`).allInnerTexts();
}

/** The text (label and description) of the row labelled `label`, once it is shown. */
export async function rowText(session: VSCodeSession, label: string, which: Which = 'first'): Promise<string> {
  const row = treeRow(session, label, which);
  await row.waitFor({ state: 'visible', timeout: 60_000 });
  return row.innerText();
}

/** Waits until the row labelled `label` shows text matching `re` (descriptions update asynchronously). */
export async function expectRow(session: VSCodeSession, label: string, re: RegExp, limitMs = 60_000): Promise<string> {
  return until(session.page, () => rowText(session, label), re, `row ${label}`, limitMs);
}

/**
 * Clears what floats over the tree before a click: a row's tooltip (it opens under the pointer left on the row
 * clicked before and covers the rows below it, when the next row takes longer than the hover delay to appear) and
 * a menu left open (e.g. the one clicking the single terminal's title opens).
 */
export async function clearOverlays(session: VSCodeSession): Promise<void> {
  const { page } = session;
  const menu = page.locator('.context-view .monaco-menu');
  if (await menu.isVisible()) {
    await page.keyboard.press('Escape');
    await menu.waitFor({ state: 'hidden', timeout: 15_000 });
  }
  const hover = page.locator('.context-view .hover-contents, .workbench-hover-container .monaco-hover');
  if (await hover.first().isVisible()) {
    await page.mouse.move(1, 1); // the title bar: nothing there opens a tooltip
    await hover.first().waitFor({ state: 'hidden', timeout: 15_000 });
  }
}

/**
 * Expands the row and waits until it shows expanded. A click that lands while the tree redraws the row (a listing
 * arriving) is done once more; a row already expanded, or still loading its children, is never clicked (a click
 * would collapse it).
 */
export async function expandTreeRow(session: VSCodeSession, label: string, which: Which = 'first'): Promise<void> {
  const { page } = session;
  const r = treeRow(session, label, which);
  await r.waitFor({ state: 'visible', timeout: 60_000 });
  const expanded = async (): Promise<boolean> => (await r.getAttribute('aria-expanded', { timeout: 5_000 })) === 'true';
  const loading = async (): Promise<boolean> => (await r.locator('.codicon-tree-item-loading').count()) > 0;
  await act(page, {
    what: `the row ${label} expanded`,
    action: async () => {
      if ((await expanded()) || (await loading())) return;
      await clearOverlays(session);
      await r.click();
      await page.mouse.move(1, 1); // leave no pointer on the row to open its tooltip over the next ones
    },
    effect: expanded,
    describe: async () => `aria-expanded=${await r.getAttribute('aria-expanded')}`,
  });
}

/** Options of {@link treeContextMenu}. */
export interface ContextMenuOptions {
  /** Which row of several with the label. */
  which?: Which;
  /**
   * What the command does that the test waits for (a panel drawing data). When it does not come and the log shows
   * the command never ran, the whole pick is done once more.
   */
  effect?: () => Promise<boolean>;
}

/**
 * Right-click a row and choose a context-menu entry. Done when the menu has closed and the extension logged the
 * entry's command; a click that did not land (the menu still open, VS Code ignoring a click that follows the menu's
 * opening too closely) is made again, and a menu that closed without running its command is opened again.
 */
export async function treeContextMenu(session: VSCodeSession, label: string, entry: RegExp, opts: ContextMenuOptions = {}): Promise<void> {
  const { page } = session;
  const row = treeRow(session, label, opts.which);
  const menu = page.locator('.context-view .monaco-menu');
  const item = page.locator('.context-view .action-label', { hasText: entry }).first();
  const menuEntries = async (): Promise<string> => `menu entries: ${JSON.stringify(await page.locator('.context-view .action-label').allInnerTexts())}`;

  const openMenu = (): Promise<void> =>
    act(page, {
      what: `the context menu of ${label} showing ${entry}`,
      action: async () => {
        if (await item.isVisible()) return;
        await clearOverlays(session);
        await row.waitFor({ state: 'visible', timeout: 60_000 });
        await row.click({ button: 'right' });
      },
      effect: () => item.isVisible(),
      describe: menuEntries,
      retryAfterMs: 10_000,
    });

  await openMenu();
  const shown = (await item.innerText()).trim();
  const id = commandIdOf(shown);
  const before = id ? commandRuns(session, id) : 0;
  const ran = (): boolean => (id ? commandRuns(session, id) > before : true);

  const click = (): Promise<void> =>
    act(page, {
      what: `the context menu closed after clicking "${shown}"`,
      action: async () => {
        if (!(await menu.isVisible())) return;
        await item.hover();
        await page.waitForTimeout(400);
        await item.click();
      },
      effect: async () => !(await menu.isVisible()),
      describe: menuEntries,
      retryAfterMs: 5_000,
    });

  await act(page, {
    what: `"${shown}" from the context menu of ${label} ran${opts.effect ? ' and took effect' : ''}`,
    action: async () => {
      if (ran()) return; // it ran: only its effect is awaited, never a second run
      if (!(await menu.isVisible())) await openMenu();
      await click();
    },
    effect: async () => ran() && (opts.effect ? await opts.effect() : true),
    describe: async () => `command ${id ?? '(not ours)'} logged ${id ? commandRuns(session, id) - before : '?'} time(s)`,
  });
}
