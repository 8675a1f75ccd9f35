/// <reference lib="dom" />
/**
 * A chart's picture for "Save as PNG…": the chart canvas at its own pixel size (CSS size × device pixel ratio),
 * over the page's background colour (a transparent PNG of light lines on a dark theme is unreadable elsewhere).
 * The webview cannot write files: the PNG goes to the extension, which asks where to save it.
 */

/** The PNG of this canvas over the page background, base64 without the `data:` prefix. */
export function chartPngBase64(canvas: HTMLCanvasElement): string {
  const out = document.createElement('canvas');
  out.width = canvas.width;
  out.height = canvas.height;
  const ctx = out.getContext('2d');
  if (!ctx) return pngOf(canvas);
  const bg = getComputedStyle(document.body).backgroundColor;
  ctx.fillStyle = bg && bg !== 'rgba(0, 0, 0, 0)' && bg !== 'transparent' ? bg : '#ffffff';
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.drawImage(canvas, 0, 0);
  return pngOf(out);
}

function pngOf(canvas: HTMLCanvasElement): string {
  const url = canvas.toDataURL('image/png');
  const comma = url.indexOf(',');
  return comma >= 0 ? url.slice(comma + 1) : '';
}
