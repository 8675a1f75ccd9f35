/**
 * Sidebar tree rows by their label, for the end-to-end tests: find, expand, and pick from a row's context menu.
 * Labels are matched exactly (`step_100` never matches `step_1000`).
 */
import type { Locator } from 'playwright-core';
import type { VSCodeSession } from './vscode';

function exactly(label: string): RegExp {
  return new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
}

/** The first sidebar tree row whose label is exactly `label`. */
export function treeRow(session: VSCodeSession, label: string): Locator {
  return session.page
    .locator('.part.sidebar .monaco-list-row[role=treeitem]')
    .filter({ has: session.page.locator('.label-name', { hasText: exactly(label) }) })
    .first();
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

/** Expands the row (waits until it shows expanded). */
export async function expandTreeRow(session: VSCodeSession, label: string): Promise<void> {
  const r = treeRow(session, label);
  await r.waitFor({ state: 'visible', timeout: 30_000 });
  if ((await r.getAttribute('aria-expanded')) !== 'true') {
    await clearOverlays(session);
    await r.click();
    await session.page.mouse.move(1, 1); // leave no pointer on the row to open its tooltip over the next ones
  }
  await session.page.waitForFunction((el) => el?.getAttribute('aria-expanded') === 'true', await r.elementHandle(), { timeout: 30_000 });
}

/** Right-click a row and choose a context-menu entry (VS Code ignores a click that follows the menu's opening too closely). */
export async function treeContextMenu(session: VSCodeSession, label: string, entry: RegExp): Promise<void> {
  await clearOverlays(session);
  await treeRow(session, label).click({ button: 'right' });
  const item = session.page.locator('.context-view .action-label', { hasText: entry });
  await item.waitFor({ state: 'visible', timeout: 15_000 });
  await item.hover();
  await session.page.waitForTimeout(400);
  await item.click();
  await session.page.locator('.context-view .monaco-menu').waitFor({ state: 'hidden', timeout: 15_000 });
}
