/** The eval table page: strict CSP with a nonce, the table's cells, and remote text only ever as text. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { evalTableCsp, evalTableHtml } from '../../src/extension/eval/evalTableHtml';
import type { EvalTable } from '../../src/core/eval/table';

const table: EvalTable = {
  metrics: ['acceptance_length'],
  rows: [{ step: 20000, checkpoint: 'step_20000', profile: '<img src=x onerror=alert(1)>', state: 'passed', startedAt: Date.UTC(2026, 0, 1), id: 'e1', others: 0, values: { acceptance_length: 6.4 } }],
};

test('CSP: nothing by default; script and style only with this page\'s nonce; no eval, no inline without nonce', () => {
  const html = evalTableHtml({ title: 't', table, emptyText: '', nonce: 'abc123' });
  assert.equal(evalTableCsp('abc123'), "default-src 'none'; script-src 'nonce-abc123'; style-src 'nonce-abc123'");
  assert.ok(html.includes(`content="default-src 'none'; script-src 'nonce-abc123'; style-src 'nonce-abc123'"`.replace(/'/g, '&#39;')));
  assert.equal((html.match(/<script/g) ?? []).length, 1);
  assert.match(html, /<script nonce="abc123">/);
  assert.match(html, /<style nonce="abc123">/);
  assert.doesNotMatch(html, /unsafe-|style="|onclick=/);
});

test('the table: header and cells; hostile names escaped', () => {
  const html = evalTableHtml({ title: 'run <b>x</b>', table, emptyText: '', nonce: 'n' });
  assert.match(html, /<th scope="col" class="num">acceptance_length<\/th>/);
  assert.match(html, /<td class="num">20000<\/td>/);
  assert.match(html, /<td class="num">6\.4<\/td>/);
  assert.ok(html.includes('&lt;img src=x onerror=alert(1)&gt;'));
  assert.ok(!html.includes('<img'));
  assert.ok(html.includes('<h1>run &lt;b&gt;x&lt;/b&gt;</h1>'));
});

test('no evals: the empty text instead of a table, copy buttons disabled', () => {
  const html = evalTableHtml({ title: 't', table: { metrics: [], rows: [] }, emptyText: 'No evals of this run yet', nonce: 'n' });
  assert.match(html, /<p class="empty">No evals of this run yet<\/p>/);
  assert.doesNotMatch(html, /<table/);
  assert.equal((html.match(/ disabled>/g) ?? []).length, 2);
});
