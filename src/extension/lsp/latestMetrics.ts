/**
 * The latest values of a run's JSONL metrics log, for the language server's hover over a run: only the log's
 * last few KB cross the wire (one `tail -c`), and only the last complete line is read. No `vscode` here.
 */
import type { RemoteCommand } from '../../core/remote';
import { commandFailed } from '../../core/remote';
import { parseJsonLine } from '../../core/metrics/formats/jsonl';
import { TIME_KEYS, X_KEYS } from '../../core/metrics/formats/fields';
import { put } from '../../core/util/dict';

/** Bytes read from the end of the log: a few lines of a typical training log. */
export const TAIL_BYTES = 16 * 1024;

export interface LatestValues {
  step?: number;
  values: Record<string, number>;
}

export function latestMetricsCommand(path: string): RemoteCommand<LatestValues> {
  const describe = `read the last line of ${path}`;
  return {
    argv: ['tail', '-c', String(TAIL_BYTES), path],
    describe,
    maxOutputBytes: TAIL_BYTES + 1024,
    parse: (result) => {
      if (result.code !== 0) throw commandFailed(describe, result);
      return lastValues(result.stdout.toString('utf8'), result.stdout.length >= TAIL_BYTES);
    },
  };
}

/** Numeric top-level fields of the last complete JSON line; `cut` says the first line may be partial. */
export function lastValues(text: string, cut: boolean): LatestValues {
  const lines = text.split('\n');
  if (cut) lines.shift();
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i].trim();
    if (!line) continue;
    const parsed = parseJsonLine(line);
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) continue;
    const values: Record<string, number> = {};
    let step: number | undefined;
    for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) {
      if (typeof v !== 'number' || !Number.isFinite(v)) continue;
      if (X_KEYS.includes(k)) step ??= v;
      else if (!TIME_KEYS.includes(k)) put(values, k, v);
    }
    return { ...(step !== undefined ? { step } : {}), values };
  }
  return { values: {} };
}
