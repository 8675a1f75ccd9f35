/**
 * MLflow's local file store (`mlruns/<experiment_id>/<run_id>/metrics/<key>`): one file per metric key, one
 * line per logged value, `<timestamp ms> <value> <step>`. The layout and the line come from MLflow's source,
 * mlflow/store/tracking/file_store.py: `log_metric` appends `f"{metric.timestamp} {metric.value} {metric.step}\n"`
 * to `_get_metric_path(...)` = `<run>/metrics/<key>` (a key with `/` is a nested path), and
 * `_get_metric_from_line` reads 2 or 3 space-separated fields, step 0 when there are 2 (files written before
 * MLflow 1.0 have no step). Values are Python's `str(float)`: `nan`, `inf` are possible.
 *
 * The key is not in the file: it is the file's path below `metrics/`, given to the parser (`train/loss`).
 * - x is the step (`step`; 0 for a two-field line, as MLflow itself reads it), time the timestamp (ms).
 * - A line with another number of fields, or whose fields are not numbers, is skipped and counted; a
 *   non-finite value is a skipped value. Empty lines are ignored.
 */
import { LineSplitter } from './lines';
import type { MetricsParser } from './parser';
import type { RunMetrics } from '../series/series';
import { excerpt, isNonFiniteText, parseDecimal } from './fields';

export class MlflowMetricParser implements MetricsParser {
  readonly format = 'mlflow' as const;
  private readonly splitter: LineSplitter;
  private readonly decoder = new TextDecoder('utf-8');

  constructor(
    readonly metrics: RunMetrics,
    /** The metric key: the file's path below the run's `metrics/` folder. */
    readonly key: string,
  ) {
    this.splitter = new LineSplitter({
      line: (buf, start, end, lineNo, offset) => this.line(this.decoder.decode(buf.subarray(start, end)), lineNo, offset, false),
      tooLong: (lineNo, offset) => this.metrics.noteBadLine({ line: lineNo, byteOffset: offset, excerpt: '', reason: 'line too long' }),
    });
  }

  get pendingBytes(): number {
    return this.splitter.pendingBytes;
  }

  push(chunk: Uint8Array): void {
    this.splitter.push(chunk);
  }

  end(): void {
    const last = this.splitter.end();
    if (last) this.line(this.decoder.decode(last.bytes), last.lineNo, last.byteOffset, true);
  }

  private line(text: string, lineNo: number, byteOffset: number, unterminated: boolean): void {
    if (text.trim() === '') return;
    const parts = text.trim().split(/ +/);
    const ts = parts.length === 2 || parts.length === 3 ? parseDecimal(parts[0]) : undefined;
    const step = parts.length === 3 ? parseDecimal(parts[2]) : 0;
    const valueText = parts[1] ?? '';
    const value = parseDecimal(valueText);
    const valueOk = value !== undefined || isNonFiniteText(valueText);
    if (ts === undefined || !Number.isFinite(ts) || step === undefined || !Number.isFinite(step) || !valueOk) {
      // An unterminated last line that does not parse is still being written.
      if (!unterminated) {
        const reason = parts.length === 2 || parts.length === 3 ? 'not numbers' : `${parts.length} fields where MLflow writes 2 or 3`;
        this.metrics.noteBadLine({ line: lineNo, byteOffset, excerpt: excerpt(text), reason });
      }
      return;
    }
    this.metrics.records++;
    this.metrics.noteX('step');
    if (value === undefined || !Number.isFinite(value)) {
      this.metrics.noteBadValue({ line: lineNo, byteOffset, excerpt: excerpt(text), reason: 'non-finite value', key: this.key });
      return;
    }
    this.metrics.add(this.key, step, value, ts);
  }
}

/**
 * The metric key of an MLflow metric file: its path below `<runPath>/metrics/` (`train/loss`); without a run
 * path that holds it, its path below the first `/metrics/` folder, else its file name.
 */
export function mlflowKeyOf(path: string, runPath?: string): string {
  const own = runPath !== undefined ? `${runPath === '/' ? '' : runPath}/metrics/` : undefined;
  if (own !== undefined && path.startsWith(own) && path.length > own.length) return path.slice(own.length);
  const i = path.indexOf('/metrics/');
  return i >= 0 && path.length > i + 9 ? path.slice(i + '/metrics/'.length) : path.slice(path.lastIndexOf('/') + 1);
}
