/**
 * The eval table's page: the run's evals as an HTML table (step × metric) with two buttons, Copy as CSV and Copy as
 * Markdown. Why a webview rather than a read-only document: it is a grid to read (states, empty cells, numbers
 * aligned), the two copies are explicit one-click actions, and it redraws in place when an eval finishes.
 * The metrics page's strict CSP (html.ts): nothing by default, the one inline script by this page's nonce only, the
 * stylesheet from media/. Every remote or user string is escaped. Pure: no `vscode`.
 */
import { tableCells, type EvalTable } from '../../core/eval/table';
import { localTime } from '../../shared/localTime';
import { contentSecurityPolicy, makeNonce } from '../metrics/html';

export interface EvalTablePage {
  /** webview.cspSource */
  cspSource: string;
  /** media/evalTable.css as a webview URI. */
  styleUri: string;
  /** e.g. `drafter — kpro6/pct:200`. */
  title: string;
  table: EvalTable;
  /** Shown when there are no rows (what to do, or why the listing failed). */
  emptyText: string;
  nonce?: string;
}

export function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

const SCRIPT = `
const vscode = acquireVsCodeApi();
for (const b of document.querySelectorAll('button[data-format]')) {
  b.addEventListener('click', () => vscode.postMessage({ type: 'copyEvalTable', format: b.dataset.format }));
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

/** The whole page. Numeric columns (step and the metrics) are right-aligned. */
export function evalTableHtml(page: EvalTablePage): string {
  const nonce = page.nonce ?? makeNonce();
  const [head, ...rows] = tableCells(page.table);
  const numeric = (i: number): boolean => i === 0 || i >= 5;
  const stateCol = 3;
  const th = head!.map((h, i) => `<th scope="col"${numeric(i) ? ' class="num"' : ''}>${escapeHtml(h)}</th>`).join('');
  const startedCol = 4;
  // The start time in local time, as the chart's hover shows it; the ISO instant (what CSV and Markdown copy) stays
  // in the element's datetime and title.
  const cell = (c: string, i: number): string => {
    if (i !== startedCol || !c) return escapeHtml(c);
    const ms = Date.parse(c);
    return Number.isFinite(ms) ? `<time datetime="${escapeHtml(c)}" title="${escapeHtml(c)}">${escapeHtml(localTime(ms))}</time>` : escapeHtml(c);
  };
  const body = rows
    .map((r) => `<tr>${r.map((c, i) => `<td class="${numeric(i) ? 'num' : i === stateCol ? `state-${escapeHtml(c)}` : ''}">${cell(c, i)}</td>`).join('')}</tr>`)
    .join('\n');
  const content = rows.length
    ? `<table aria-label="Evals"><thead><tr>${th}</tr></thead><tbody>\n${body}\n</tbody></table>`
    : `<p class="empty">${escapeHtml(page.emptyText)}</p>`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(contentSecurityPolicy(page.cspSource, nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeHtml(page.styleUri)}">
<title>Evals</title>
</head>
<body>
<h1>${escapeHtml(page.title)}</h1>
<div class="actions"><button type="button" data-format="csv"${rows.length ? '' : ' disabled'}>Copy as CSV</button><button type="button" data-format="markdown"${rows.length ? '' : ' disabled'}>Copy as Markdown</button><span id="copied" class="copied" role="status"></span></div>
${content}
<script nonce="${escapeHtml(nonce)}">${SCRIPT}</script>
</body>
</html>`;
}

