/**
 * UI steps for the end-to-end tests that wait for their effect, not for their selector.
 *
 * A click on a busy workbench (CI may be a loaded 2-core machine) can land on a row being redrawn, on a menu that
 * has not armed its items yet, or on a palette still filtering: the selector was there, the effect never comes.
 * Every step here therefore names the effect it is for (the row expanded, the menu closed and its command ran, the
 * quick pick moved to the next step) and does the action once more when that effect has not come within a while;
 * then it fails saying which effect was missing. Waits are generous and bound only hanging, never speed.
 *
 * "The command ran" is read from the extension's own log: the command wrapper (src/extension/commandRunner.ts)
 * logs `command <id>` for every command before it does anything, so a retry happens only when the first try did
 * not run the command at all.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { REPO_ROOT } from './toolchain';
import type { VSCodeSession } from './vscode';

/** How long an action's effect may take before the action is done once more. */
export const RETRY_AFTER_MS = 20_000;
/** How long an action's effect may take in all (after the second try too). */
export const EFFECT_LIMIT_MS = 90_000;

/** Polls `check` every `everyMs` until it holds (true) or `limitMs` passed (false). */
export async function poll(page: Page, check: () => Promise<boolean>, limitMs: number, everyMs = 150): Promise<boolean> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    if (await check().catch(() => false)) return true;
    if (Date.now() > deadline) return false;
    await page.waitForTimeout(everyMs);
  }
}

/** What {@link act} does and waits for. */
export interface Step {
  /** The effect in words, for the error: "the row step_100 expanded". */
  what: string;
  /** Does the action. Called again for the retry, so it must look at the state itself (never toggle blindly). */
  action: () => Promise<void>;
  /** True once the action's effect is there. */
  effect: () => Promise<boolean>;
  /** Where the effect stands now, for the error message. */
  describe?: () => Promise<string>;
  retryAfterMs?: number;
  limitMs?: number;
}

/**
 * Does `action`, waits for `effect`; when it has not come within `retryAfterMs`, does `action` once more and waits
 * for the rest of `limitMs`. Throws naming the effect that never came (and where things stood) otherwise.
 */
export async function act(page: Page, step: Step): Promise<void> {
  const retryAfter = step.retryAfterMs ?? RETRY_AFTER_MS;
  const limit = step.limitMs ?? EFFECT_LIMIT_MS;
  const start = Date.now();
  await step.action();
  if (await poll(page, step.effect, retryAfter)) return;
  await step.action();
  if (await poll(page, step.effect, Math.max(limit - (Date.now() - start), retryAfter))) return;
  const where = step.describe ? await step.describe().catch((e: unknown) => `(could not tell: ${String(e)})`) : '';
  throw new Error(`${step.what}: not seen after two tries in ${Math.round((Date.now() - start) / 1000)} s${where ? `; ${where}` : ''}`);
}

/**
 * Reads a value until it has stopped changing: two reads `quietMs` apart that agree (and that `ok` accepts) are
 * returned. For lists that fill in while they are read (a quick pick, the tree's rows during a listing).
 */
export async function settled<T>(page: Page, read: () => Promise<T>, ok: (v: T) => boolean, what: string, limitMs = EFFECT_LIMIT_MS, quietMs = 400): Promise<T> {
  const deadline = Date.now() + limitMs;
  let last: T | undefined;
  let lastJson: string | undefined;
  for (;;) {
    const v = await read().catch(() => undefined);
    const json = JSON.stringify(v);
    if (v !== undefined && json === lastJson && ok(v)) return v;
    if (v !== undefined) {
      last = v;
      lastJson = json;
    }
    if (Date.now() > deadline) throw new Error(`${what}: never settled within ${limitMs} ms; last: ${JSON.stringify(last)}`);
    await page.waitForTimeout(quietMs);
  }
}

/** Polls `read` until it matches, returns what it read; fails with the last value read. */
export async function until(page: Page, read: () => Promise<string>, match: RegExp | string, what: string, limitMs = 60_000): Promise<string> {
  let last = '';
  const found = await poll(page, async () => {
    last = await read();
    return typeof match === 'string' ? last.includes(match) : match.test(last);
  }, limitMs, 250);
  if (found) return last;
  throw new Error(`${what}: ${String(match)} not seen within ${limitMs} ms; last: ${JSON.stringify(last.slice(-500))}`);
}

// ---- Commands and the log that proves they ran ---------------------------------------------------------------------

interface ManifestCommand {
  command: string;
  title: string;
  category?: string;
}

let manifestCommands: ManifestCommand[] | undefined;

function commands(): ManifestCommand[] {
  manifestCommands ??= (JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')).contributes.commands as ManifestCommand[]);
  return manifestCommands;
}

/** Our command shown with this text: a menu entry shows its title, the palette `Category: title`. */
export function commandIdOf(shown: string): string | undefined {
  const text = shown.trim();
  return commands().find((c) => c.title === text || (c.category && `${c.category}: ${c.title}` === text))?.command;
}

/** How many times the extension has logged running command `id` so far. */
export function commandRuns(session: VSCodeSession, id: string): number {
  // The log channel's lines read `… [info] command remoteRuns.openMetrics`; `$` keeps `…openMetrics` from counting
  // `…openMetricsInline`.
  const re = new RegExp(`\\bcommand ${id.replace(/\./g, '\\.')}$`, 'gm');
  return session.vscodeLogs().match(re)?.length ?? 0;
}

// ---- Quick picks ---------------------------------------------------------------------------------------------------

const QUICK_INPUT = '.quick-input-widget';

/** The quick input as shown now: visible or not, its title, its input's text and its rows' labels. */
export async function quickInputState(page: Page): Promise<{ visible: boolean; title: string; value: string; busy: boolean; labels: string[] }> {
  // (No named helper inside the callback: the test's TypeScript loader would wrap it in a `__name` call the page
  // does not have.)
  return page.evaluate((sel) => {
    const w = document.querySelector<HTMLElement>(sel);
    const progress = w?.querySelector('.quick-input-progress') ?? null;
    const [widgetShown, progressShown] = [w, progress].map((e) => {
      if (!e) return false;
      const st = getComputedStyle(e);
      return e.getClientRects().length > 0 && st.display !== 'none' && st.visibility !== 'hidden';
    });
    const visible = widgetShown && !w!.classList.contains('quick-input-widget-closing');
    return {
      visible,
      title: visible ? (w!.querySelector('.quick-input-title')?.textContent ?? '').trim() : '',
      value: visible ? (w!.querySelector<HTMLInputElement>('.quick-input-box input')?.value ?? '') : '',
      busy: visible && progressShown && progress!.classList.contains('active') && !progress!.classList.contains('done'),
      // A row's first label is its label; a detail line (a run's path) is a label of its own further down.
      labels: visible ? Array.from(w!.querySelectorAll('.quick-input-list .monaco-list-row')).map((r) => r.querySelector('.label-name')?.textContent ?? '') : [],
    };
  }, QUICK_INPUT);
}

/**
 * Waits until the quick pick shows the step whose title matches `title` (exactly the step: `(4/4): checkpoint`, not
 * any title holding the word), is not busy, and its rows have stopped changing; returns the rows' labels.
 */
export async function quickPickStep(session: VSCodeSession, title: RegExp, ok: (labels: string[]) => boolean = (l) => l.length > 0): Promise<string[]> {
  const s = await settled(
    session.page,
    () => quickInputState(session.page),
    (q) => q.visible && title.test(q.title) && !q.busy && ok(q.labels),
    `the quick pick step ${title}`,
  );
  return s.labels;
}

/**
 * Picks the row labelled exactly `label` in the quick pick now shown; the effect is that the pick moved on (another
 * title, or closed). The row is clicked again once if the pick stayed where it was.
 */
export async function pickQuickItem(session: VSCodeSession, label: string): Promise<void> {
  const { page } = session;
  const before = await quickInputState(page);
  const row = page.locator(`${QUICK_INPUT} .quick-input-list .monaco-list-row`).filter({ has: page.locator('.label-name', { hasText: exactly(label) }) }).first();
  await act(page, {
    what: `the quick pick "${before.title}" moved on after picking ${label}`,
    action: async () => {
      const now = await quickInputState(page);
      if (!now.visible || now.title !== before.title) return; // it moved on meanwhile
      await row.waitFor({ state: 'visible', timeout: 30_000 });
      await row.click();
    },
    effect: async () => {
      const now = await quickInputState(page);
      return !now.visible || now.title !== before.title;
    },
    describe: async () => JSON.stringify(await quickInputState(page)),
  });
}

/**
 * Types `filter` into the quick pick that the action opened and picks the row whose text holds `label` (the "Add
 * run…" pick lists runs as `name — host/target`); the effect is that the pick closed.
 */
export async function filterAndPick(session: VSCodeSession, filter: string, label: string): Promise<void> {
  const { page } = session;
  const input = page.locator(`${QUICK_INPUT} .quick-input-box input`);
  await input.waitFor({ state: 'visible', timeout: 30_000 });
  await input.fill(filter);
  const row = page.locator(`${QUICK_INPUT} .quick-input-list .monaco-list-row`).filter({ hasText: label }).first();
  await act(page, {
    what: `the quick pick closed after picking ${label}`,
    action: async () => {
      if (!(await quickInputState(page)).visible) return;
      await row.waitFor({ state: 'visible', timeout: 30_000 });
      await row.click();
    },
    effect: async () => !(await quickInputState(page)).visible,
    describe: async () => JSON.stringify(await quickInputState(page)),
  });
}

export function exactly(label: string): RegExp {
  return new RegExp(`^${escapeRegExp(label)}$`);
}

export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Hovers `target` until `shown` is visible (a tooltip); the pointer is moved off and back once if it did not show. */
export async function hoverUntil(page: Page, target: Locator, shown: Locator, what: string): Promise<void> {
  let tries = 0;
  await act(page, {
    what,
    action: async () => {
      if (tries++ > 0) await page.mouse.move(1, 1);
      await target.hover();
    },
    effect: () => shown.isVisible(),
    retryAfterMs: 10_000,
    limitMs: 40_000,
  });
}
