/** The one incremental interface every metrics log parser implements. */
import type { RunMetrics } from '../series/series';

export type MetricsFormat = 'jsonl' | 'csv' | 'trainer-state' | 'tfevents' | 'mlflow';

export interface MetricsParser {
  readonly format: MetricsFormat;
  /** Where parsed points and skipped-line counts go. */
  readonly metrics: RunMetrics;
  /** Feed the next bytes of the file, in order. Chunk boundaries may fall anywhere, even inside a character. */
  push(chunk: Uint8Array): void;
  /**
   * The file is complete (not merely "no more bytes yet"; a live log is never ended). A final line without a
   * newline is taken if it parses; if it does not, it was cut off mid-write and is dropped without counting.
   */
  end(): void;
  /** Bytes of a partial last line or record held back until more arrive. */
  readonly pendingBytes: number;
}
