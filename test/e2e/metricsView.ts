/**
 * The metrics webview in a real VS Code, for the end-to-end tests: find its document once it has drawn a snapshot,
 * and count what each chart canvas drew (pixels read back from the canvas, the proof that chart.js painted).
 */
import type { Frame } from 'playwright-core';
import { act, filterAndPick, quickInputState } from './ui';
import type { VSCodeSession } from './vscode';

/** The metrics webview's document in this mode if one has drawn a snapshot now, with any webview errors seen. */
async function findMetricsFrame(session: VSCodeSession, mode: 'panel' | 'inline'): Promise<{ frame?: Frame; errors: string[] }> {
  const errors: string[] = [];
  for (const f of session.page.frames()) {
    const s = await f
      .evaluate(() => ({ ready: document.body?.dataset.ready, mode: document.body?.dataset.mode, error: document.body?.dataset.error }))
      .catch(() => undefined);
    if (s?.error) errors.push(s.error);
    if (s?.ready === 'true' && s.mode === mode) return { frame: f, errors };
  }
  return { errors };
}

/** Whether a metrics webview in this mode holds data now: the effect of Open Metrics, Show Inline Metrics. */
export async function hasMetricsFrame(session: VSCodeSession, mode: 'panel' | 'inline'): Promise<boolean> {
  return (await findMetricsFrame(session, mode)).frame !== undefined;
}

/** The metrics webview's document (the inner frame holding our page) in this mode, once it has drawn a snapshot. */
export async function metricsFrame(session: VSCodeSession, mode: 'panel' | 'inline', timeoutMs = 60_000): Promise<Frame> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { frame, errors } = await findMetricsFrame(session, mode);
    if (frame) return frame;
    if (Date.now() > deadline) throw new Error(`no ${mode} metrics webview with data within ${timeoutMs} ms${errors.length ? `; webview errors: ${errors.join(' | ')}` : ''}`);
    await session.page.waitForTimeout(200);
  }
}

/** Non-transparent pixels per chart canvas, by metric. */
export async function drawnPixels(frame: Frame): Promise<Record<string, number>> {
  return frame.evaluate(() => {
    const out: Record<string, number> = {};
    for (const section of Array.from(document.querySelectorAll<HTMLElement>('section.metric'))) {
      const canvas = section.querySelector('canvas');
      const ctx = canvas?.getContext('2d');
      if (!canvas || !ctx) continue;
      const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
      let n = 0;
      for (let i = 3; i < data.length; i += 4) if (data[i] > 0) n++;
      out[section.dataset.metric ?? '?'] = n;
    }
    return out;
  });
}

/**
 * "Add run…" in the panel's toolbar, then picks the run whose row holds `name` from the quick pick it opens: done
 * when the pick has closed. A button click that opened no pick is made again.
 */
export async function addRunFromPanel(session: VSCodeSession, frame: Frame, name: string): Promise<void> {
  const { page } = session;
  await act(page, {
    what: 'the Add run… quick pick open',
    action: async () => {
      if (!(await quickInputState(page)).visible) await frame.locator('.toolbar button', { hasText: 'Add run…' }).click();
    },
    effect: async () => (await quickInputState(page)).visible,
  });
  await filterAndPick(session, name, name);
}
