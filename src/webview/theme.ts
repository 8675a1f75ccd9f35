/// <reference lib="dom" />
/** Colours from VS Code's theme (CSS variables the workbench sets on the webview's body), re-read on theme change. */
import { alphaOf, ensureContrast, mix, parseColor, toHex } from './contrast';

export interface Theme {
  /** What the charts are drawn on (the body's own background), which run colours must stand out from. */
  background: string;
  foreground: string;
  muted: string;
  grid: string;
  highlight: string;
  font: string;
  palette: string[];
}

const PALETTE_VARS = [
  '--vscode-charts-blue',
  '--vscode-charts-orange',
  '--vscode-charts-green',
  '--vscode-charts-purple',
  '--vscode-charts-red',
  '--vscode-charts-yellow',
];
const PALETTE_FALLBACK = ['#3794ff', '#d18616', '#89d185', '#b180d7', '#f14c4c', '#cca700'];

export function readTheme(): Theme {
  const style = getComputedStyle(document.body);
  const v = (name: string, fallback: string) => style.getPropertyValue(name).trim() || fallback;
  // The drawn background: the body's (editor or panel background, as metrics.css sets it), else the editor's.
  const drawn = style.backgroundColor;
  const background = drawn && alphaOf(drawn) > 0 ? drawn : v('--vscode-editor-background', '#1e1e1e');
  return {
    background,
    foreground: v('--vscode-foreground', '#cccccc'),
    muted: v('--vscode-descriptionForeground', '#9d9d9d'),
    grid: v('--vscode-editorWidget-border', v('--vscode-panel-border', 'rgba(128,128,128,0.35)')),
    highlight: v('--vscode-focusBorder', '#007fd4'),
    font: v('--vscode-font-family', 'sans-serif'),
    palette: PALETTE_VARS.map((name, i) => v(name, PALETTE_FALLBACK[i])),
  };
}

/**
 * The run's colour: palette entries first, then the palette again mixed 60:40 with the background; either way at
 * least 3:1 against the background (contrast.ts), so a compared run reads in every theme. Opaque, `#rrggbb`.
 */
export function runColor(theme: Pick<Theme, 'palette' | 'background'>, index: number): string {
  const base = theme.palette[index % theme.palette.length];
  const key = `${base}\u0000${theme.background}\u0000${index < theme.palette.length}`;
  let out = runColors.get(key);
  if (out === undefined) {
    const c = parseColor(base);
    const bg = parseColor(theme.background);
    const faded = index >= theme.palette.length && c && bg ? toHex(mix(c, bg, 0.6)) : base;
    out = ensureContrast(faded, theme.background, 3);
    if (runColors.size > 256) runColors.clear();
    runColors.set(key, out);
  }
  return out;
}
const runColors = new Map<string, string>();

/** `#rgb`, `#rrggbb`, `#rrggbbaa` or `rgb(…)` with this opacity; other notations are returned unchanged. */
export function withAlpha(color: string, alpha: number): string {
  const c = parseColor(color);
  return c ? `rgba(${c.r}, ${c.g}, ${c.b}, ${alpha})` : color.trim();
}
