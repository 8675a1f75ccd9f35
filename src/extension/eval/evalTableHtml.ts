/**
 * The eval table's page: the run's evals as a table (step × metric) on the shared table page (table/tablePage.ts),
 * start times in local time as the chart's hover shows them. Pure: no `vscode`.
 */
import { evalTableNumeric, tableCells, type EvalTable } from '../../core/eval/table';
import { localTime } from '../../shared/localTime';
import { escapeHtml, tablePageHtml } from '../table/tablePage';

export { escapeHtml };

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

const STATE_COL = 3;
const STARTED_COL = 4;

/** The whole page. Numeric columns (step and the metrics) are right-aligned. */
export function evalTableHtml(page: EvalTablePage): string {
  return tablePageHtml({
    cspSource: page.cspSource,
    styleUri: page.styleUri,
    name: 'Evals',
    title: page.title,
    cells: tableCells(page.table),
    numeric: evalTableNumeric(page.table),
    emptyText: page.emptyText,
    copyMessage: 'copyEvalTable',
    ...(page.nonce ? { nonce: page.nonce } : {}),
    cellClass: (c, i) => (i === STATE_COL ? `state-${c}` : ''),
    // The start time in local time, as the chart's hover shows it; the ISO instant (what CSV and Markdown copy) stays
    // in the element's datetime and title.
    cellHtml: (c, i) => {
      if (i !== STARTED_COL || !c) return undefined;
      const ms = Date.parse(c);
      return Number.isFinite(ms) ? `<time datetime="${escapeHtml(c)}" title="${escapeHtml(c)}">${escapeHtml(localTime(ms))}</time>` : undefined;
    },
  });
}
