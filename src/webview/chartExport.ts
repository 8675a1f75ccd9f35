/// <reference lib="dom" />
/**
 * A chart's picture for "Save as PNG…": a header with the chart's title (the metric, then the panel's title in the
 * muted colour) and a legend of the runs drawn (a swatch in each run's colour, dashed for the reference run), over
 * the chart drawn again at EXPORT_SCALE device pixels per CSS pixel at least, all on the page's background (a
 * transparent PNG of light lines on a dark theme is unreadable elsewhere). A 385×180 px chart on a 1× display
 * exports as 770 px wide and 360 px plus the header high: sharp on a HiDPI screen or a slide. The webview cannot
 * write files: the PNG goes to the extension, which asks where to save it.
 */
import type { Chart } from './chartjs';
import type { Theme } from './theme';

/** Device pixels per CSS pixel of an exported chart, at least (more on a display that has more). */
export const EXPORT_SCALE = 2;

/** One run of the exported chart's legend. */
export interface ExportLegendItem {
  label: string;
  color: string;
  dashed: boolean;
}

export interface ChartPicture {
  title: string;
  subtitle: string;
  legend: ExportLegendItem[];
  theme: Theme;
}

/** CSS pixels of the header's lines and gaps (scaled with the picture). */
const PAD = 8;
const TITLE_PX = 13;
const LEGEND_PX = 11;
const LINE_GAP = 5;
const SWATCH_W = 14;

/**
 * The PNG of `chart` with its title and legend (see the file comment), base64 without the `data:` prefix. The chart
 * is drawn again at the export's pixel ratio and back at the screen's within this call: nothing shows in between.
 */
export function chartPngBase64(chart: Chart, picture: ChartPicture): string {
  const scale = Math.max(EXPORT_SCALE, window.devicePixelRatio || 1);
  const options = chart.options as { devicePixelRatio?: number };
  const before = options.devicePixelRatio;
  options.devicePixelRatio = scale;
  chart.resize();
  try {
    return pngOf(compose(chart.canvas, scale, picture));
  } finally {
    options.devicePixelRatio = before;
    chart.resize();
  }
}

function compose(canvas: HTMLCanvasElement, scale: number, p: ChartPicture): HTMLCanvasElement {
  const out = document.createElement('canvas');
  const ctx = out.getContext('2d');
  if (!ctx) return canvas;
  const width = canvas.width / scale; // CSS pixels
  const font = (px: number, weight = ''): string => `${weight} ${px}px ${p.theme.font}`.trim();
  // Lay the legend out in CSS pixels first (it wraps to the chart's width), then size the picture.
  ctx.font = font(LEGEND_PX);
  const rows: { item: ExportLegendItem; x: number; row: number }[] = [];
  let x = PAD;
  let row = 0;
  for (const item of p.legend) {
    const w = SWATCH_W + 4 + ctx.measureText(item.label).width + 12;
    if (x > PAD && x + w > width - PAD) {
      row++;
      x = PAD;
    }
    rows.push({ item, x, row });
    x += w;
  }
  const legendRows = p.legend.length ? row + 1 : 0;
  const header = PAD + TITLE_PX + legendRows * (LEGEND_PX + LINE_GAP) + PAD;
  out.width = canvas.width;
  out.height = Math.round(canvas.height + header * scale);
  const bg = p.theme.background && p.theme.background !== 'transparent' && p.theme.background !== 'rgba(0, 0, 0, 0)' ? p.theme.background : '#ffffff';
  ctx.fillStyle = bg;
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.save();
  ctx.scale(scale, scale);
  ctx.textBaseline = 'top';
  // Title, then the panel's title after it (cut with an ellipsis where the chart is too narrow for both).
  ctx.font = font(TITLE_PX, '600');
  ctx.fillStyle = p.theme.foreground;
  const title = fit(ctx, p.title, width - 2 * PAD);
  ctx.fillText(title, PAD, PAD);
  const titleWidth = ctx.measureText(title).width;
  ctx.font = font(LEGEND_PX);
  ctx.fillStyle = p.theme.muted;
  const room = width - 2 * PAD - titleWidth - 10;
  if (p.subtitle && room > 30) ctx.fillText(fit(ctx, p.subtitle, room), PAD + titleWidth + 10, PAD + (TITLE_PX - LEGEND_PX));
  // Legend.
  const top = PAD + TITLE_PX + LINE_GAP;
  for (const { item, x: at, row: r } of rows) {
    const y = top + r * (LEGEND_PX + LINE_GAP);
    ctx.strokeStyle = item.color;
    ctx.lineWidth = 3;
    ctx.setLineDash(item.dashed ? [4, 2] : []);
    ctx.beginPath();
    ctx.moveTo(at, y + LEGEND_PX / 2);
    ctx.lineTo(at + SWATCH_W, y + LEGEND_PX / 2);
    ctx.stroke();
    ctx.fillStyle = p.theme.foreground;
    ctx.fillText(fit(ctx, item.label, width - at - SWATCH_W - 4 - PAD), at + SWATCH_W + 4, y);
  }
  ctx.restore();
  ctx.drawImage(canvas, 0, Math.round(header * scale));
  return out;
}

/** `text`, or as much of it as fits in `max` px followed by `…`. */
function fit(ctx: CanvasRenderingContext2D, text: string, max: number): string {
  if (ctx.measureText(text).width <= max) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (ctx.measureText(`${text.slice(0, mid)}…`).width <= max) lo = mid;
    else hi = mid - 1;
  }
  return `${text.slice(0, lo)}…`;
}

function pngOf(canvas: HTMLCanvasElement): string {
  const url = canvas.toDataURL('image/png');
  const comma = url.indexOf(',');
  return comma >= 0 ? url.slice(comma + 1) : '';
}
