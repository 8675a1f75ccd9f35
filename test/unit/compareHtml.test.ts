/**
 * The compare page (issue 18) on checkpoints the real writers wrote: its rows are the core diff's (added, removed,
 * changed; totals side by side), two identical checkpoints say so, and a side that cannot be compared says why in
 * its kind's words (unreachable, not readable, incomplete) instead of a blank or misleading table. Strict CSP, one
 * nonce script, remote names escaped.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { diffInspections, inspectFiles, Pieces, type Inspection } from '../../src/core/inspect';
import { emptyStateText } from '../../src/core/emptyStates';
import { compareContent, compareHtml, type SideState } from '../../src/extension/inspect/compareHtml';
import { parseFromWebview } from '../../src/extension/metrics/validate';

const FIX = path.join(__dirname, '..', 'fixtures', 'real', 'written');

function read(rel: string): Inspection {
  const p = path.join(FIX, rel);
  const files = fs.statSync(p).isDirectory()
    ? fs.readdirSync(p).map((f) => ({ name: f, size: fs.statSync(path.join(p, f)).size, pieces: Pieces.whole(fs.readFileSync(path.join(p, f))) }))
    : [{ name: path.basename(p), size: fs.statSync(p).size, pieces: Pieces.whole(fs.readFileSync(p)) }];
  return inspectFiles(files).inspection;
}

const parts = { cspSource: 'vscode-webview://src', styleUri: 'vscode-webview://src/media/compare.css', nonce: 'NONCE1' };
const read_ = (inspection: Inspection): SideState => ({ state: 'read', inspection });
const page = (a: SideState, b: SideState, same = false): string => compareHtml({ ...parts, a: { address: 'h/host/run/step_100', side: a }, b: { address: 'h/host/run/step_700', side: b }, sameCheckpoint: same });

/** The diff table's rows as [change, name, A, B]. */
function rows(html: string): string[][] {
  const body = /<table class="diff"[^>]*>[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? '';
  return [...body.matchAll(/<tr data-change="(\w+)">([\s\S]*?)<\/tr>/g)].map((m) => [m[1], ...[...m[2].matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((c) => c[1])]);
}

test('base.pt → edited.pt: every row is the core diff\'s, totals side by side', () => {
  const a = read('inspect_more/base.pt');
  const b = read('inspect_more/edited.pt');
  const d = diffInspections(a, b);
  const html = page(read_(a), read_(b));
  const r = rows(html);
  assert.deepEqual(r.filter((x) => x[0] === 'added').map((x) => x[2]), d.added.map((t) => t.name));
  assert.deepEqual(r.filter((x) => x[0] === 'removed').map((x) => x[2]), d.removed.map((t) => t.name));
  assert.deepEqual(r.filter((x) => x[0] === 'changed').map((x) => [x[1], x[2], x[3], x[4]]), d.changed.map((c) => [c.changed.join(', '), c.name, `${c.a.dtype} [${c.a.shape.join(', ')}]`, `${c.b.dtype} [${c.b.shape.join(', ')}]`]));
  assert.ok(d.added.length > 0 && d.removed.length > 0 && d.changed.length > 0);
  const params = /<tr data-total="params"><th scope="row">parameters<\/th><td class="num">([^<]*)<\/td><td class="num">([^<]*)<\/td><td class="num">([^<]*)<\/td>/.exec(html);
  assert.deepEqual(params?.slice(1), [d.totals.a.params.toLocaleString('en-US'), d.totals.b.params.toLocaleString('en-US'), `+${(d.totals.b.params - d.totals.a.params).toLocaleString('en-US')}`]);
  assert.match(html, /<span data-count="added">8 added<\/span> · <span data-count="removed">1 removed<\/span> · <span data-count="changed">2 changed<\/span>/);
  assert.doesNotMatch(html, /class="problem/);
});

test('identical checkpoints say so (and the same checkpoint twice says that too); no diff table', () => {
  const a = read('inspect/train_state.pt');
  const html = page(read_(a), read_(read('inspect/train_state.pt')), true);
  assert.match(html, /<p class="identical" role="status">Identical: the same 18 model tensors \(names, shapes and dtypes\) on both sides\. A and B are the same checkpoint\.<\/p>/);
  assert.doesNotMatch(html, /<table class="diff"/);
  assert.match(html, /<table class="totals"/);
});

test('a side that failed says its kind\'s title, its message and hint; no table', () => {
  const a = read('inspect/train_state.pt');
  const html = page(read_(a), { state: 'failed', kind: 'unreachable', message: 'connect ECONNREFUSED 127.0.0.1:1' });
  const t = emptyStateText('unreachable');
  assert.ok(html.includes(`<div class="problem kind-unreachable" role="alert" data-side="b" data-kind="unreachable"><strong>B: ${t.title}</strong> — connect ECONNREFUSED 127.0.0.1:1<div class="hint">${t.hint}</div></div>`), html);
  assert.doesNotMatch(html, /<table class="(diff|totals)"/);
  assert.doesNotMatch(html, /data-action="retry" disabled/);
});

test('an unreadable format is "Not readable" with what the file is, never a table of every tensor removed', () => {
  const html = page(read_(read('inspect/train_state.pt')), read_(read('inspect/legacy.pt')));
  assert.match(html, /data-side="b" data-kind="unreadable"><strong>B: Not readable<\/strong> — legacy\.pt: a torch\.save file in the legacy format/);
  assert.doesNotMatch(html, /<table class="diff"/);
});

test('an incomplete checkpoint is said first, and the tensors its headers list are still compared', () => {
  const a = read('inspect_more/hf_bin');
  const b = read('inspect_more/hf_bin_broken');
  const html = page(read_(a), read_(b));
  assert.match(html, /data-side="b" data-kind="incomplete"><strong>B: Incomplete<\/strong> — 4 of 5 shards named by pytorch_model\.bin\.index\.json are there/);
  assert.equal(rows(html).filter((r) => r[0] === 'removed').length, diffInspections(a, b).removed.length);
  assert.equal(compareContent({ a: { address: '', side: read_(a) }, b: { address: '', side: read_(b) } }).identical, false);
});

test('while reading: a status per side, no table', () => {
  const html = page({ state: 'reading' }, read_(read('inspect/state_dict.pt')));
  assert.match(html, /data-side="a" data-kind="reading"><strong>A: Reading<\/strong>/);
  assert.doesNotMatch(html, /<table class="(diff|totals)"/);
});

test('CSP: nothing by default, one nonce script, styles from the extension; hostile names stay text', () => {
  const html = compareHtml({ ...parts, a: { address: 'h/host/<img src=x onerror=alert(1)>/s', side: { state: 'failed', kind: undefined, message: '"><script>alert(1)</script>' } }, b: { address: 'b', side: { state: 'reading' } }, sameCheckpoint: false });
  assert.ok(html.includes(`content="default-src &#39;none&#39;; script-src &#39;nonce-NONCE1&#39;; style-src vscode-webview://src;`));
  assert.equal((html.match(/<script/g) ?? []).length, 1);
  assert.match(html, /<script nonce="NONCE1">/);
  assert.doesNotMatch(html, /<img|unsafe-|style="|<style|onclick=/);
  assert.ok(html.includes('&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;'));
});

test('the page\'s messages are validated: the three actions typed, anything else dropped', () => {
  for (const action of ['swap', 'changeB', 'retry'] as const) assert.deepEqual(parseFromWebview({ type: 'compare', action, extra: 1 }), { type: 'compare', action });
  for (const bad of [{ type: 'compare' }, { type: 'compare', action: 'rm -rf' }, { type: 'compare', action: 1 }]) assert.equal(parseFromWebview(bad), undefined);
  // The page's buttons post exactly those actions.
  const html = page({ state: 'reading' }, { state: 'reading' });
  assert.deepEqual([...html.matchAll(/data-action="(\w+)"/g)].map((m) => m[1]), ['swap', 'changeB', 'retry']);
});
