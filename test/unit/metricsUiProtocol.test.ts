/** The webview boundary: messages validated before use, restore state, the references file, the CSP, the status text. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFromWebview, parseRestoreState } from '../../src/extension/metrics/validate';
import { parseReferences, rewriteBlocked, serializeReferences, withLineAdded, withLineRemoved } from '../../src/core/metrics/references';
import { contentSecurityPolicy, metricsHtml } from '../../src/extension/metrics/html';
import { panelTitles, pickStatusMetric, statusAriaLabel, statusText, xLabel } from '../../src/extension/metrics/statusText';

test('well-formed messages come through typed, with extra fields dropped', () => {
  // ready carries the page's view settings (the webview owns them), checked as a view is.
  assert.deepEqual(parseFromWebview({ type: 'ready', width: 412.7, range: { xMin: 1, xMax: 9 }, smoothing: 0.95, hidden: ['lr'], evil: 1 }), {
    type: 'ready', width: 412, range: { xMin: 1, xMax: 9 }, smoothing: 0.95, hidden: ['lr'],
  });
  assert.equal(parseFromWebview({ type: 'ready', width: 300, range: null, smoothing: 1, hidden: [] }), undefined);
  assert.deepEqual(parseFromWebview({ type: 'view', width: 300, range: { xMin: 10, xMax: 20 }, smoothing: 0.6, hidden: ['lr'] }), {
    type: 'view', width: 300, range: { xMin: 10, xMax: 20 }, smoothing: 0.6, hidden: ['lr'],
  });
  assert.deepEqual(parseFromWebview({ type: 'view', width: 300, range: null, smoothing: 0, hidden: [] })?.type, 'view');
  assert.deepEqual(parseFromWebview({ type: 'hover', seq: 3, x: 1500 }), { type: 'hover', seq: 3, x: 1500 });
  assert.deepEqual(parseFromWebview({ type: 'selectCheckpoint', step: 14000 }), { type: 'selectCheckpoint', step: 14000 });
  assert.deepEqual(parseFromWebview({ type: 'setReferenceRun', runKey: null }), { type: 'setReferenceRun', runKey: null });
  assert.deepEqual(parseFromWebview({ type: 'addReferenceLine', metric: 'loss', value: 1.2, label: ' paper ', source: 'arXiv:1234' }), {
    type: 'addReferenceLine', metric: 'loss', value: 1.2, label: 'paper', source: 'arXiv:1234',
  });
});

test('malformed messages are dropped', () => {
  const bad: unknown[] = [
    null, 'ready', 42, [], {}, { type: 'nope' }, { type: 'ready' }, { type: 'ready', width: 0 }, { type: 'ready', width: NaN },
    { type: 'ready', width: 1e9 }, { type: 'view', width: 300, range: { xMin: 5, xMax: 5 }, smoothing: 0, hidden: [] },
    { type: 'view', width: 300, range: null, smoothing: 1, hidden: [] }, { type: 'view', width: 300, range: null, smoothing: 0, hidden: [1] },
    { type: 'view', width: 300, smoothing: 0, hidden: [] }, { type: 'hover', seq: 1.5, x: 1 }, { type: 'hover', seq: 1, x: Infinity },
    { type: 'selectCheckpoint', step: '14000' }, { type: 'removeRun', runKey: 7 }, { type: 'removeRun', runKey: 'x'.repeat(10_000) },
    { type: 'addReferenceLine', metric: 'loss', value: Infinity, label: 'a', source: '' },
    { type: 'addReferenceLine', metric: '', value: 1, label: 'a', source: '' },
    { type: 'addReferenceLine', metric: 'loss', value: 1, label: '   ', source: '' },
    { type: 'addReferenceLine', metric: 'loss', value: '1', label: 'a', source: '' },
    { type: 'removeReferenceLine', id: '' }, { type: '__proto__' },
  ];
  for (const m of bad) assert.equal(parseFromWebview(m), undefined, JSON.stringify(m));
});

const run = {
  hostName: 'box',
  target: { kind: 'pct', id: '200' },
  runPath: '/workspace',
  runName: 'workspace',
  metrics: ['/workspace/logs/train.jsonl'],
  checkpoints: [{ step: 10000, name: 'step_10000', path: '/workspace/checkpoints/step_10000' }],
};

test('restore state: accepted as written (bare or inside the webview state), rejected when tampered', () => {
  const state = { version: 1, primary: run, others: [{ run: { ...run, runPath: '/w2', runName: 'w2' }, role: 'reference' }] };
  assert.deepEqual(parseRestoreState(state), state);
  assert.deepEqual(parseRestoreState({ restore: state, ui: {} }), state);
  assert.equal(parseRestoreState({ ...state, version: 2 }), undefined);
  assert.equal(parseRestoreState({ ...state, primary: { ...run, target: { kind: 'lxc', id: '1' } } }), undefined);
  assert.equal(parseRestoreState({ ...state, others: [{ run, role: 'primary' }] }), undefined);
  assert.equal(parseRestoreState({ ...state, primary: { ...run, checkpoints: [{ step: 'x', name: 'a', path: 'b' }] } }), undefined);
  assert.equal(parseRestoreState(undefined), undefined);
});

test('references file: parse, add, remove, and ids that do not shift when another line goes', () => {
  assert.deepEqual(parseReferences(undefined), { lines: [], specRows: [], problems: [] });
  assert.deepEqual(parseReferences('  '), { lines: [], specRows: [], problems: [] });
  assert.match(parseReferences('{oops').problems[0], /not valid JSON/);
  const text = JSON.stringify({ version: 1, lines: [
    { metric: 'loss', value: 1.2, label: 'paper', source: 'Table 2' },
    { metric: 'acc', value: '0.25', label: '', source: 7 },
    { metric: 'loss', value: 'high' },
    { value: 1 },
  ] });
  const parsed = parseReferences(text);
  assert.equal(parsed.lines.length, 2);
  assert.deepEqual(parsed.lines.map(({ metric, value, label, source }) => ({ metric, value, label, source })), [
    { metric: 'loss', value: 1.2, label: 'paper', source: 'Table 2' },
    { metric: 'acc', value: 0.25, label: '0.25', source: '' },
  ]);
  assert.equal(parsed.problems.length, 2);
  const added = withLineAdded(parsed.lines, { metric: 'streak', value: 6.5, label: 'paper: acceptance length', source: 'arXiv' });
  assert.equal(added.length, 3);
  assert.deepEqual(added.slice(0, 2).map((l) => l.id), parsed.lines.map((l) => l.id));
  const removed = withLineRemoved(added, parsed.lines[0].id);
  assert.deepEqual(removed.map((l) => l.metric), ['acc', 'streak']);
  assert.equal(removed[1].id, added[2].id);
  // Round trip through the file text.
  assert.deepEqual(parseReferences(serializeReferences(removed)).lines, removed);
  // Two identical lines get distinct ids.
  const twice = withLineAdded(removed, { metric: 'acc', value: 0.25, label: '0.25', source: '' });
  assert.equal(new Set(twice.map((l) => l.id)).size, twice.length);
});

test('the page: strict CSP with a nonce, no eval, no inline styles, resources from the webview source only', () => {
  const csp = contentSecurityPolicy('https://res.example', 'abc123');
  assert.match(csp, /^default-src 'none'; /);
  assert.match(csp, /script-src 'nonce-abc123'(;|$)/);
  assert.match(csp, /style-src https:\/\/res\.example(;|$)/);
  assert.doesNotMatch(csp, /unsafe-eval|unsafe-inline|\*/);
  const html = metricsHtml({ cspSource: 'https://res.example', scriptUri: 'https://res.example/dist/webview.js', styleUri: 'https://res.example/media/metrics.css', mode: 'inline', nonce: 'abc123' });
  assert.match(html, /<script nonce="abc123" src="https:\/\/res\.example\/dist\/webview\.js"><\/script>/);
  assert.match(html, /<body data-mode="inline">/);
  assert.equal((html.match(/<script/g) ?? []).length, 1, 'one script, the bundle');
  assert.doesNotMatch(html, /<style|style="/);
});

test('status bar text: chosen metric, else a loss, else the first; codicon syntax in remote names is defused', () => {
  assert.equal(pickStatusMetric(['acc', 'train/loss', 'lr'], ''), 'train/loss');
  assert.equal(pickStatusMetric(['acc', 'loss'], 'acc'), 'acc');
  assert.equal(pickStatusMetric(['acc', 'lr'], 'missing'), 'acc');
  assert.equal(pickStatusMetric([], ''), undefined);
  assert.equal(statusText('run', 23760, 'loss', 0.912345), '$(pulse) run · step 23,760 · loss 0.9123');
  assert.equal(statusText('run', undefined, undefined, undefined), '$(pulse) run');
  assert.doesNotMatch(statusText('$(alert) x', 1, '$(bug)', 1).slice(10), /\$\(/);
});

test('status bar accessibility label: plain words (no codicon, no &nbsp; from the markdown tooltip)', () => {
  assert.equal(statusAriaLabel('run-a', 'box/docker:trainer', 23760, 'loss', 0.912345), 'Pinned run run-a on box/docker:trainer, step 23,760, loss 0.9123. Click to open its metrics.');
  assert.equal(statusAriaLabel('run a', 'box', 12, undefined, undefined, 'epoch'), 'Pinned run run a on box, epoch 12. Click to open its metrics.');
  assert.doesNotMatch(statusAriaLabel('run a', 'box', undefined, undefined, undefined), /&\w+;|\$\(/);
});

test('setXColumn: a run key and a column name, or null for the logs own choice; anything else dropped', () => {
  assert.deepEqual(parseFromWebview({ type: 'setXColumn', runKey: 'r', key: 'epoch', extra: 1 }), { type: 'setXColumn', runKey: 'r', key: 'epoch' });
  assert.deepEqual(parseFromWebview({ type: 'setXColumn', runKey: 'r', key: null }), { type: 'setXColumn', runKey: 'r', key: null });
  for (const bad of [{ type: 'setXColumn', runKey: 'r' }, { type: 'setXColumn', runKey: 'r', key: '' }, { type: 'setXColumn', runKey: 1, key: 'x' }, { type: 'setXColumn', key: 'x' }]) {
    assert.equal(parseFromWebview(bad), undefined, JSON.stringify(bad));
  }
});

test('status bar text names the x of the run: epoch, line, or x when its logs differ', () => {
  assert.equal(statusText('r', 12, 'loss', 0.5, 'epoch'), '$(pulse) r · epoch 12 · loss 0.5');
  assert.equal(statusText('r', 12, undefined, undefined, 'step'), '$(pulse) r · step 12');
  assert.equal(statusText('r', 12, undefined, undefined), '$(pulse) r · step 12');
  assert.equal(xLabel('line number'), 'line');
  assert.equal(xLabel('epoch (history.csv), step (event files)'), 'x');
  assert.equal(xLabel('time/total_timesteps'), 'time/total_timesteps');
});

test('panel titles: a run name alone, and where the run is when two open panels have runs of the same name', () => {
  const t = panelTitles([
    { key: 'a', runName: 'workspace', where: 'kpro6/pct:200' },
    { key: 'b', runName: 'workspace', where: 'gpu2/host' },
    { key: 'c', runName: 'expA/seed1', where: 'gpu2/host' },
  ]);
  assert.deepEqual([...t.values()], ['Metrics: workspace · kpro6/pct:200', 'Metrics: workspace · gpu2/host', 'Metrics: expA/seed1']);
  assert.equal(panelTitles([{ key: 'a', runName: 'workspace', where: 'kpro6/pct:200' }]).get('a'), 'Metrics: workspace');
});

test('status bar, its accessibility label and panel titles show remote names escaped: no control, bidi or newline', () => {
  const name = 'run\u001b]0;pwned\u0007\u202eA\nB';
  const shown = 'run\\x1b]0;pwned\\x07\\u202eA\\x0aB';
  assert.equal(statusText(name, 5, 'lo\u001b[2Jss', 1), `$(pulse) ${shown} · step 5 · lo\\x1b[2Jss 1`);
  assert.equal(statusAriaLabel(name, 'box/docker:\u202ex', 5, 'l\u0085', 1), `Pinned run ${shown} on box/docker:\\u202ex, step 5, l\\u0085 1. Click to open its metrics.`);
  const titles = panelTitles([{ key: 'a', runName: name, where: 'h1/\u001bx' }, { key: 'b', runName: name, where: 'h2' }]);
  assert.deepEqual([...titles.values()], [`Metrics: ${shown} · h1/\\x1bx`, `Metrics: ${shown} · h2`]);
});

test('a references file read only in part is never written back from what was read: a bad entry, a file that is not JSON, a shape not known', () => {
  const good = serializeReferences([{ id: '', metric: 'loss', value: 0.5, label: 'paper', source: '' }]);
  assert.equal(rewriteBlocked(parseReferences(good)), undefined, 'a file read whole may be rewritten');
  assert.equal(rewriteBlocked(parseReferences(undefined)), undefined, 'no file yet: nothing to lose');
  const partly = JSON.stringify({ lines: [{ metric: 'loss', value: 0.5 }, { metric: 'acc', value: 'high' }] });
  assert.equal(parseReferences(partly).lines.length, 1, 'the readable line is still shown');
  for (const text of [partly, '{"lines": [', '{"other": 1}']) {
    const why = rewriteBlocked(parseReferences(text));
    assert.match(why ?? '', /nothing was written/, text);
  }
  assert.match(rewriteBlocked(parseReferences(partly)) ?? '', /lines\[1\]: "value" must be a finite number/);
});
