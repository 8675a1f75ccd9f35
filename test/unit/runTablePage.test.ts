/** The run table page: the shared table page's strict CSP and escaping, its copy message, and its validated messages. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tablePageHtml } from '../../src/extension/table/tablePage';
import { parseRunTableFromWebview } from '../../src/extension/table/tableMessages';

const page = (cells: string[][]) =>
  tablePageHtml({
    cspSource: 'vscode-webview://src',
    styleUri: 'vscode-webview://src/media/evalTable.css',
    name: 'Runs',
    title: 'Runs on box/<b>host</b>',
    notes: ['Config columns: <i>lr</i>'],
    cells,
    numeric: [false, false, true],
    emptyText: 'No runs',
    copyMessage: 'copyRunTable',
    buttons: [{ label: 'Refresh', type: 'refreshRunTable' }],
    nonce: 'n0nce',
  });

test('strict CSP, one nonce script, remote text escaped everywhere, the copy message named on the body', () => {
  const html = page([['run', 'state', 'latest step'], ['<img src=x onerror=alert(1)>', 'live', '300']]);
  assert.ok(html.includes(`content="default-src &#39;none&#39;; script-src &#39;nonce-n0nce&#39;; style-src vscode-webview://src;`));
  assert.equal((html.match(/<script/g) ?? []).length, 1);
  assert.doesNotMatch(html, /unsafe-|style="|<style|onclick=|<img|<b>|<i>/);
  assert.match(html, /<body data-copy="copyRunTable">/);
  assert.match(html, /<td class="num">300<\/td>/);
  assert.match(html, /<button type="button" data-post="refreshRunTable">Refresh<\/button>/);
  assert.match(html, /<p class="note">Config columns: &lt;i&gt;lr&lt;\/i&gt;<\/p>/);
});

test('no rows: the empty text, copy buttons disabled', () => {
  const html = page([['run']]);
  assert.match(html, /<p class="empty">No runs<\/p>/);
  assert.equal((html.match(/ disabled>/g) ?? []).length, 2);
});

test('messages from the page are validated: only the two it sends, with their fields', () => {
  assert.deepEqual(parseRunTableFromWebview({ type: 'copyRunTable', format: 'csv', extra: 1 }), { type: 'copyRunTable', format: 'csv' });
  assert.deepEqual(parseRunTableFromWebview({ type: 'refreshRunTable' }), { type: 'refreshRunTable' });
  for (const bad of [null, [], 'copyRunTable', { type: 'copyRunTable', format: 'html' }, { type: 'copyEvalTable', format: 'csv' }, { type: 'openPanel' }]) {
    assert.equal(parseRunTableFromWebview(bad), undefined, JSON.stringify(bad));
  }
});
