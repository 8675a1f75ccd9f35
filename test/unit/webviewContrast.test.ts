/**
 * Run colours stand out from the theme's background by at least 3:1 (WCAG 2.1, 1.4.11 non-text contrast), issue 17:
 * "the compared run's colour has low contrast in dark themes". The compared run gets the palette's second colour,
 * `--vscode-charts-orange`; a theme that does not set `charts.orange` gets VS Code's default, which is
 * `minimap.findMatchHighlight` = `editor.findMatchHighlightBackground` = `#EA5C0055`: an orange at one third opacity,
 * drawn as is a dim brown on a dark editor. The palettes below are VS Code 1.139's own (code-server 4.139's
 * lib/vscode: the color registry in out/vs/code/browser/workbench/workbench.js for the defaults, and
 * extensions/theme-defaults/themes/*.json for the themes that set charts.* and the backgrounds).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { alphaOf, contrastRatio, ensureContrast, luminance, mix, parseColor, type Rgb } from '../../src/webview/contrast';
import { runColor, withAlpha } from '../../src/webview/theme';

// blue, orange, green, purple, red, yellow: theme.ts's order.
const DEFAULT_DARK = ['#59a4f9', '#EA5C0055', '#89D185', '#B180D7', '#F14C4C', '#CCA700'];
const DEFAULT_LIGHT = ['#0063d3', '#EA5C0055', '#388A34', '#652D90', '#E51400', '#BF8803'];
const THEMES: { name: string; palette: string[]; backgrounds: string[] }[] = [
  { name: 'Dark Modern', palette: DEFAULT_DARK, backgrounds: ['#1F1F1F', '#181818'] },
  { name: 'Dark+', palette: DEFAULT_DARK, backgrounds: ['#1E1E1E'] },
  { name: 'Light Modern', palette: DEFAULT_LIGHT, backgrounds: ['#FFFFFF', '#F8F8F8'] },
  { name: 'Light+', palette: DEFAULT_LIGHT, backgrounds: ['#FFFFFF'] },
  { name: '2026 Dark', palette: ['#57A3F8', '#CD861A', '#86CF86', '#AD80D7', '#EF8773', '#E0B97F'], backgrounds: ['#121314', '#191A1B'] },
  { name: '2026 Light', palette: ['#1A5CFF', '#d18616', '#388A34', '#652D90', '#ad0707', '#667309'], backgrounds: ['#FFFFFF', '#FAFAFD'] },
  { name: 'High Contrast', palette: ['#59a4f9', '#d18616', '#89D185', '#B180D7', '#F48771', '#FFD370'], backgrounds: ['#000000'] },
];

const rgb = (c: string): Rgb => parseColor(c)!;
/** What a colour with alpha looks like drawn on `bg`. */
const drawnOn = (c: string, bg: string): Rgb => mix(rgb(c), rgb(bg), alphaOf(c));

test('WCAG ratios: black on white is 21, a colour on itself 1, and the sRGB luminance of known colours', () => {
  assert.equal(contrastRatio(rgb('#000'), rgb('#fff')), 21);
  assert.equal(contrastRatio(rgb('#777'), rgb('rgb(119, 119, 119)')), 1);
  assert.ok(Math.abs(luminance(rgb('#808080')) - 0.2159) < 1e-4);
  // WebAIM's reference pair: #767676 on white is 4.54:1.
  assert.ok(Math.abs(contrastRatio(rgb('#767676'), rgb('#ffffff')) - 4.54) < 0.01);
  assert.deepEqual(parseColor('rgba(10, 20, 30, 0.5)'), { r: 10, g: 20, b: 30 });
  assert.equal(alphaOf('#EA5C0055'), 0x55 / 255);
  assert.equal(alphaOf('rgba(1, 2, 3, 0.25)'), 0.25);
  assert.equal(withAlpha('#EA5C0055', 0.22), 'rgba(234, 92, 0, 0.22)');
  assert.equal(parseColor('var(--x)'), undefined);
  assert.equal(ensureContrast('var(--x)', '#000'), 'var(--x)', 'what cannot be read is left alone');
});

test('the compared run in Dark Modern: the theme\'s orange as drawn was under 3:1; its run colour is well over', () => {
  const bg = '#1F1F1F';
  const before = contrastRatio(drawnOn('#EA5C0055', bg), rgb(bg));
  assert.ok(before < 1.8, `the default charts.orange at its own opacity: ${before.toFixed(2)}:1`);
  const compared = runColor({ palette: DEFAULT_DARK, background: bg }, 1);
  assert.match(compared, /^#[0-9a-f]{6}$/, 'opaque');
  assert.ok(contrastRatio(rgb(compared), rgb(bg)) >= 3, `${compared}: ${contrastRatio(rgb(compared), rgb(bg)).toFixed(2)}:1`);
  // Still the theme's orange (its hue), not some other colour.
  const c = rgb(compared);
  assert.ok(c.r > c.g && c.g > c.b, `orange: ${compared}`);
});

test('every run colour of every default theme is at least 3:1 on its editor and panel backgrounds, past the palette too', () => {
  for (const theme of THEMES) {
    for (const background of theme.backgrounds) {
      for (let index = 0; index < 12; index++) {
        const c = runColor({ palette: theme.palette, background }, index);
        const ratio = contrastRatio(rgb(c), rgb(background));
        assert.ok(ratio >= 3, `${theme.name} on ${background}, run ${index}: ${c} is ${ratio.toFixed(2)}:1`);
      }
      // Runs past the palette differ from the first six (mixed with the background), so two runs never share a colour.
      const first = runColor({ palette: theme.palette, background }, 0);
      assert.notEqual(runColor({ palette: theme.palette, background }, 6), first, theme.name);
    }
  }
});

test('a colour already readable is kept as it is; one too faint moves the least way that reaches the ratio', () => {
  assert.equal(ensureContrast('#57A3F8', '#121314'), '#57a3f8');
  const light = ensureContrast('#d18616', '#FFFFFF');
  const r = contrastRatio(rgb(light), rgb('#FFFFFF'));
  assert.ok(r >= 3 && r < 3.6, `2026 Light's orange on white, darkened just enough: ${light} ${r.toFixed(2)}:1`);
});
