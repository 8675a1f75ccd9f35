/**
 * One chart's series as CSV, at full resolution (every point the runs' logs hold, not the decimated ones a chart
 * draws): "Save as CSV…" in the metrics panel.
 *
 * Columns: the x (`step`, or the run's own x field such as `epoch`), then for each series its wall time when its
 * log has one (`wall_time`, ISO 8601 UTC to the millisecond, as the CLI's CSV prints it) and its values. With one
 * series the columns are `step,wall_time,<metric>`; with several (compared runs) each series' columns are named
 * after its run: `<run> - wall_time`, `<run> - <metric>`.
 *
 * One row per step, in ascending order; a cell is empty where a series has no point at that step. A step a series
 * holds more than once (a resumed run logged it again, in a later segment) is as many rows, in the order logged:
 * nothing is dropped. Steps print exactly (the shortest decimal that reads back as the same float64); values as
 * the series shows them (shortestFloat32: what the log wrote, to the float32 precision held), which read back to
 * the same float32. Lines end in CRLF (RFC 4180).
 */
import { cellsCsv } from '../../util/textTable';

/** What a column needs of a series (Series has it). */
export interface CsvSource {
  readonly length: number;
  xAt(i: number): number;
  yShown(i: number): number;
  timeAt(i: number): number;
  readonly hasTime: boolean;
}

export interface CsvColumn {
  /** The run's name, for column names when there are several series. */
  run: string;
  series: CsvSource;
}

/** The rows of the CSV (header first), as cells; `seriesCsv` joins them. */
export function seriesCsvCells(xName: string, metric: string, columns: readonly CsvColumn[]): string[][] {
  const one = columns.length === 1;
  const head = [xName];
  for (const c of columns) {
    if (c.series.hasTime) head.push(one ? 'wall_time' : `${c.run} - wall_time`);
    head.push(one ? metric : `${c.run} - ${metric}`);
  }
  const rows: string[][] = [head];
  const orders = columns.map((c) => sortedIndices(c.series));
  const pos = columns.map(() => 0);
  for (;;) {
    // The smallest step not written yet, across the series.
    let step = Infinity;
    let any = false;
    orders.forEach((order, j) => {
      if (pos[j] < order.length) {
        const x = columns[j].series.xAt(order[pos[j]]);
        if (!any || x < step) step = x;
        any = true;
      }
    });
    if (!any) break;
    // Each series' points at that step (in log order), one row per occurrence.
    const at = orders.map((order, j) => {
      const s = columns[j].series;
      const from = pos[j];
      let to = from;
      while (to < order.length && Object.is(s.xAt(order[to]), step)) to++;
      pos[j] = to;
      return order.slice(from, to);
    });
    const count = Math.max(...at.map((a) => a.length));
    for (let k = 0; k < count; k++) {
      const row = [numberText(step)];
      columns.forEach((c, j) => {
        const i = at[j][k];
        if (c.series.hasTime) row.push(i === undefined ? '' : timeText(c.series.timeAt(i)));
        row.push(i === undefined ? '' : numberText(c.series.yShown(i)));
      });
      rows.push(row);
    }
  }
  return rows;
}

/** The CSV text (see the file comment). */
export function seriesCsv(xName: string, metric: string, columns: readonly CsvColumn[]): string {
  return cellsCsv(seriesCsvCells(xName, metric, columns));
}

/** Point indices by ascending x, ties in log order; no copy work for the usual series whose x only rises. */
function sortedIndices(s: CsvSource): Uint32Array {
  const n = s.length;
  const order = new Uint32Array(n);
  let sorted = true;
  for (let i = 0; i < n; i++) {
    order[i] = i;
    if (i > 0 && s.xAt(i) < s.xAt(i - 1)) sorted = false;
  }
  if (sorted) return order;
  const xs = Float64Array.from({ length: n }, (_, i) => s.xAt(i));
  // Array.prototype.sort is stable: equal steps keep their log order.
  return Uint32Array.from(Array.from(order).sort((a, b) => xs[a] - xs[b]));
}

/** The shortest decimal that reads back as this number (`NaN`, `Infinity` as JavaScript and Python read them). */
function numberText(v: number): string {
  return Object.is(v, -0) ? '-0' : String(v);
}

/** ISO 8601 UTC; empty where the point has no time (or one no Date can hold: ±8.64e15 ms). */
function timeText(ms: number): string {
  return Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : '';
}
