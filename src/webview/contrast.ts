/**
 * Colour contrast as WCAG 2 measures it (relative luminance, ratio (L1 + 0.05) / (L2 + 0.05)), and a run colour
 * nudged until it stands out from the theme's background by a ratio of at least 3:1 (WCAG's minimum for graphics,
 * 1.4.11). A theme's chart colours are made for its own background, but not every theme's palette reaches 3:1 on
 * it, and a colour past the palette's end is drawn lighter. Pure, unit-tested in node.
 */

export interface Rgb {
  r: number;
  g: number;
  b: number;
}

/** `#rgb`, `#rrggbb`, `#rrggbbaa` (alpha ignored), `rgb(…)` / `rgba(…)`; undefined for anything else. */
export function parseColor(color: string): Rgb | undefined {
  const c = color.trim();
  let m = /^#([0-9a-f]{3,4})$/i.exec(c);
  if (m) {
    const [r, g, b] = [...m[1]].slice(0, 3).map((h) => parseInt(h + h, 16));
    return { r, g, b };
  }
  m = /^#([0-9a-f]{6})([0-9a-f]{2})?$/i.exec(c);
  if (m) {
    const n = parseInt(m[1], 16);
    return { r: (n >> 16) & 255, g: (n >> 8) & 255, b: n & 255 };
  }
  m = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)/i.exec(c);
  if (m) return { r: Math.min(255, Number(m[1])), g: Math.min(255, Number(m[2])), b: Math.min(255, Number(m[3])) };
  return undefined;
}

/** The alpha of an `rgba(…)` or `#rrggbbaa` colour; 1 for any other. */
export function alphaOf(color: string): number {
  const c = color.trim();
  const hex = /^#[0-9a-f]{6}([0-9a-f]{2})$/i.exec(c);
  if (hex) return parseInt(hex[1], 16) / 255;
  const m = /^rgba\([^)]*[\s,/]([\d.]+)\s*\)$/i.exec(c);
  return m ? Number(m[1]) : 1;
}

export function toHex({ r, g, b }: Rgb): string {
  return `#${[r, g, b].map((v) => Math.round(Math.max(0, Math.min(255, v))).toString(16).padStart(2, '0')).join('')}`;
}

/** WCAG 2 relative luminance of an sRGB colour. */
export function luminance({ r, g, b }: Rgb): number {
  const lin = (v: number): number => {
    const s = v / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/** WCAG 2 contrast ratio of two colours, 1 to 21. */
export function contrastRatio(a: Rgb, b: Rgb): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** `a` mixed with `b`: weight 1 is `a`, 0 is `b`. */
export function mix(a: Rgb, b: Rgb, weight: number): Rgb {
  return { r: a.r * weight + b.r * (1 - weight), g: a.g * weight + b.g * (1 - weight), b: a.b * weight + b.b * (1 - weight) };
}

/**
 * `color` (as `#rrggbb`) if it has at least `min` contrast with `background`; otherwise the least step towards white
 * (on a dark background) or black (on a light one) that has. A colour that cannot be read is returned unchanged.
 */
export function ensureContrast(color: string, background: string, min = 3): string {
  const c = parseColor(color);
  const bg = parseColor(background);
  if (!c || !bg) return color;
  if (contrastRatio(c, bg) >= min) return toHex(c);
  const toward = luminance(bg) < 0.18 ? { r: 255, g: 255, b: 255 } : { r: 0, g: 0, b: 0 };
  for (let k = 1; k <= 20; k++) {
    const candidate = mix(toward, c, k / 20);
    if (contrastRatio(candidate, bg) >= min) return toHex(candidate);
  }
  return toHex(toward);
}
