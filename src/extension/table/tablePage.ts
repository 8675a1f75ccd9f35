/**
 * A table page (the eval table, the run table): a title, a line of notes, Copy as CSV / Copy as Markdown buttons (and
 * optional extra buttons), and the cells as an HTML table, numeric columns right-aligned. Why a webview rather than a
 * read-only document: it is a grid to read (states, empty cells, numbers aligned), the copies are explicit one-click
 * actions, and it redraws in place. The metrics page's strict CSP (html.ts): nothing by default, the one inline
 * script by this page's nonce only, the stylesheet from media/. Every remote or user string is escaped. Pure: no
 * `vscode`.
 */
import type { TableCopyMessageType } from '../../shared/tableProtocol';
import { makeNonce, pageHead } from '../metrics/html';
import { displayText } from '../../shared/display';

export interface TablePage {
  /** webview.cspSource */
  cspSource: string;
  /** The page's stylesheet (media/) as a webview URI. */
  styleUri: string;
  /** The `<title>` and the table's aria-label. */
  name: string;
  /** The heading, e.g. `Evals of drafter — kpro6/pct:200`. */
  title: string;
  /** Lines under the heading (what the columns are, what was left out). */
  notes?: string[];
  /** Header row, then the rows. */
  cells: string[][];
  numeric: readonly boolean[];
  /** Shown when there are no rows (what to do, or why the listing failed). */
  emptyText: string;
  /** The message type the copy buttons post. */
  copyMessage: TableCopyMessageType;
  /** Extra buttons: each posts `{ type }`. */
  buttons?: { label: string; type: string }[];
  /** A cell's HTML (already escaped) where the page shows more than the text; undefined: the escaped text. */
  cellHtml?(text: string, column: number): string | undefined;
  /** A cell's class besides `num`. */
  cellClass?(text: string, column: number): string;
  nonce?: string;
}

/** Text into HTML: controls and bidi characters of remote text escaped (display.ts displayText), then markup. */
export function escapeHtml(s: string): string {
  return displayText(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

const SCRIPT = `
const vscode = acquireVsCodeApi();
const copyType = document.body.dataset.copy;
for (const b of document.querySelectorAll('button[data-format]')) {
  b.addEventListener('click', () => vscode.postMessage({ type: copyType, format: b.dataset.format }));
}
for (const b of document.querySelectorAll('button[data-post]')) {
  b.addEventListener('click', () => vscode.postMessage({ type: b.dataset.post }));
}
window.addEventListener('message', (e) => {
  const m = e.data;
  if (m && m.type === 'copied' && typeof m.format === 'string') {
    const s = document.getElementById('copied');
    s.textContent = 'Copied as ' + (m.format === 'csv' ? 'CSV' : 'Markdown');
    document.body.dataset.copied = m.format;
  }
});
`;

/** The whole page. */
export function tablePageHtml(page: TablePage): string {
  const nonce = page.nonce ?? makeNonce();
  const [head, ...rows] = page.cells;
  const num = (i: number): boolean => page.numeric[i] === true;
  const th = (head ?? []).map((h, i) => `<th scope="col"${num(i) ? ' class="num"' : ''}>${escapeHtml(h)}</th>`).join('');
  const td = (c: string, i: number): string => {
    const cls = num(i) ? 'num' : (page.cellClass?.(c, i) ?? '');
    return `<td class="${escapeHtml(cls)}">${page.cellHtml?.(c, i) ?? escapeHtml(c)}</td>`;
  };
  const body = rows.map((r) => `<tr>${r.map(td).join('')}</tr>`).join('\n');
  const content = rows.length
    ? `<table aria-label="${escapeHtml(page.name)}"><thead><tr>${th}</tr></thead><tbody>\n${body}\n</tbody></table>`
    : `<p class="empty">${escapeHtml(page.emptyText)}</p>`;
  const notes = (page.notes ?? []).map((n) => `<p class="note">${escapeHtml(n)}</p>`).join('\n');
  const extra = (page.buttons ?? []).map((b) => `<button type="button" data-post="${escapeHtml(b.type)}">${escapeHtml(b.label)}</button>`).join('');
  const disabled = rows.length ? '' : ' disabled';
  return `${pageHead({ cspSource: page.cspSource, nonce, styleUri: page.styleUri, title: page.name }, escapeHtml)}<body data-copy="${escapeHtml(page.copyMessage)}">
<h1>${escapeHtml(page.title)}</h1>
${notes}
<div class="actions"><button type="button" data-format="csv"${disabled}>Copy as CSV</button><button type="button" data-format="markdown"${disabled}>Copy as Markdown</button>${extra}<span id="copied" class="copied" role="status"></span></div>
${content}
<script nonce="${escapeHtml(nonce)}">${SCRIPT}</script>
</body>
</html>`;
}
