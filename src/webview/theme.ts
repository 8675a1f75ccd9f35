/// <reference lib="dom" />
/** Colours from VS Code's theme (CSS variables the workbench sets on the webview's body), re-read on theme change. */

export interface Theme {
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
  return {
    foreground: v('--vscode-foreground', '#cccccc'),
    muted: v('--vscode-descriptionForeground', '#9d9d9d'),
    grid: v('--vscode-editorWidget-border', v('--vscode-panel-border', 'rgba(128,128,128,0.35)')),
    highlight: v('--vscode-focusBorder', '#007fd4'),
    font: v('--vscode-font-family', 'sans-serif'),
    palette: PALETTE_VARS.map((name, i) => v(name, PALETTE_FALLBACK[i])),
  };
}

/** The run's colour: palette entries first, then the palette again at lower strength. */
export function runColor(theme: Theme, index: number): string {
  const base = theme.palette[index % theme.palette.length];
  return index < theme.palette.length ? base : withAlpha(base, 0.6);
}

/** `#rgb`, `#rrggbb`, `#rrggbbaa` or `rgb(…)` with this opacity; other notations are returned unchanged. */
export function withAlpha(color: string, alpha: number): string {
  const c = color.trim();
  let m = /^#([0-9a-f]{3})$/i.exec(c);
  if (m) {
    const [r, g, b] = [...m[1]].map((h) => parseInt(h + h, 16));
    return `rgba(${r}, ${g}, ${b}, ${alpha})`;
  }
  m = /^#([0-9a-f]{6})([0-9a-f]{2})?$/i.exec(c);
  if (m) {
    const n = parseInt(m[1], 16);
    return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
  }
  m = /^rgba?\(([^,]+),([^,]+),([^,)]+)/i.exec(c);
  if (m) return `rgba(${m[1].trim()}, ${m[2].trim()}, ${m[3].trim()}, ${alpha})`;
  return c;
}
