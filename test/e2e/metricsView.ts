/**
 * The metrics webview in a real VS Code, for the end-to-end tests: find its document once it has drawn a snapshot,
 * and count what each chart canvas drew (pixels read back from the canvas, the proof that chart.js painted).
 */
import type { Frame } from 'playwright-core';
import type { VSCodeSession } from './vscode';

/** The metrics webview's document (the inner frame holding our page) in this mode, once it has drawn a snapshot. */
export async function metricsFrame(session: VSCodeSession, mode: 'panel' | 'inline', timeoutMs = 45_000): Promise<Frame> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const errors: string[] = [];
    for (const f of session.page.frames()) {
      const s = await f
        .evaluate(() => ({ ready: document.body?.dataset.ready, mode: document.body?.dataset.mode, error: document.body?.dataset.error }))
        .catch(() => undefined);
      if (s?.error) errors.push(s.error);
      if (s?.ready === 'true' && s.mode === mode) return f;
    }
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
