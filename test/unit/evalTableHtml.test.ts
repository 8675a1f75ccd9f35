/** The eval table page: strict CSP with a nonce, the table's cells, and remote text only ever as text. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { evalTableHtml } from '../../src/extension/eval/evalTableHtml';
import type { EvalTable } from '../../src/core/eval/table';
import { localTime } from '../../src/shared/localTime';

const parts = { cspSource: 'vscode-webview://src', styleUri: 'vscode-webview://src/media/evalTable.css' };
const table: EvalTable = {
  metrics: ['acceptance_length'],
  rows: [{ step: 20000, checkpoint: 'step_20000', profile: '<img src=x onerror=alert(1)>', state: 'passed', startedAt: Date.UTC(2026, 0, 1), id: 'e1', others: 0, values: { acceptance_length: 6.4 } }],
};

test('CSP: the metrics page\'s (nothing by default, scripts by this nonce only, styles from the extension); one script, no inline style', () => {
  const html = evalTableHtml({ ...parts, title: 't', table, emptyText: '', nonce: 'abc123' });
  assert.ok(html.includes(`content="default-src &#39;none&#39;; script-src &#39;nonce-abc123&#39;; style-src vscode-webview://src;`));
  assert.equal((html.match(/<script/g) ?? []).length, 1);
  assert.match(html, /<script nonce="abc123">/);
  assert.match(html, /<link rel="stylesheet" href="vscode-webview:\/\/src\/media\/evalTable.css">/);
  assert.doesNotMatch(html, /unsafe-|style="|<style|onclick=/);
});

test('the table: header and cells; hostile names escaped', () => {
  const html = evalTableHtml({ ...parts, title: 'run <b>x</b>', table, emptyText: '', nonce: 'n' });
  assert.match(html, /<th scope="col" class="num">acceptance_length<\/th>/);
  assert.match(html, /<td class="num">20000<\/td>/);
  assert.match(html, /<td class="num">6\.4<\/td>/);
  assert.ok(html.includes('&lt;img src=x onerror=alert(1)&gt;'));
  assert.ok(!html.includes('<img'));
  assert.ok(html.includes('<h1>run &lt;b&gt;x&lt;/b&gt;</h1>'));
  // The start time reads in local time, as the chart's hover says it; the instant stays in the element (issue 17).
  assert.ok(html.includes(`<td class=""><time datetime="2026-01-01T00:00:00.000Z" title="2026-01-01T00:00:00.000Z">${localTime(Date.UTC(2026, 0, 1))}</time></td>`), html);
});

test('no evals: the empty text instead of a table, copy buttons disabled', () => {
  const html = evalTableHtml({ ...parts, title: 't', table: { metrics: [], rows: [] }, emptyText: 'No evals of this run yet', nonce: 'n' });
  assert.match(html, /<p class="empty">No evals of this run yet<\/p>/);
  assert.doesNotMatch(html, /<table/);
  assert.equal((html.match(/ disabled>/g) ?? []).length, 2);
});

test('remote text with terminal controls and bidi overrides reaches the page escaped (display.ts), then as HTML text', () => {
  const hostile: EvalTable = { ...table, rows: [{ ...table.rows[0], checkpoint: 'step_1\u202eexe.txt', profile: 'p\u001b]52;c;eA==\u0007<b>' }] };
  const html = evalTableHtml({ ...parts, title: 'run\u0085', table: hostile, emptyText: '', nonce: 'n' });
  assert.doesNotMatch(html, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);
  assert.ok(html.includes('p\\x1b]52;c;eA==\\x07&lt;b&gt;'), html);
  assert.ok(html.includes('run\\u0085'));
});
