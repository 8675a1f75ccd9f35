/** Which parser reads which file, and how each format is followed while a run writes it. */
import { CsvParser } from './csv';
import { JsonlParser } from './jsonl';
import type { MetricsFormat, MetricsParser } from './parser';
import { RunMetrics } from './series';
import { TfEventsParser } from './tfevents';
import { TrainerStateParser } from './trainerState';

/**
 * The format of a metrics log, by file name (the same names discovery's isMetricsLog accepts, and `.ndjson`):
 * `*.jsonl`, `*.ndjson` → jsonl; `*.csv` → csv; `trainer_state.json` → trainer-state;
 * `events.out.tfevents.*` → tfevents. Undefined for anything else.
 */
export function detectFormat(path: string): MetricsFormat | undefined {
  const name = path.slice(path.lastIndexOf('/') + 1);
  if (/\.(jsonl|ndjson)$/i.test(name)) return 'jsonl';
  if (/\.csv$/i.test(name)) return 'csv';
  if (name === 'trainer_state.json') return 'trainer-state';
  if (name.startsWith('events.out.tfevents.')) return 'tfevents';
  return undefined;
}

/**
 * How a live file of this format changes: `append` logs only grow (read the new bytes), `whole` files are
 * rewritten in full (read everything again whenever size or mtime change).
 */
export function tailModeOf(format: MetricsFormat): 'append' | 'whole' {
  return format === 'trainer-state' ? 'whole' : 'append';
}

/** A fresh incremental parser writing into `metrics` (a new RunMetrics when none is given). */
export function createParser(format: MetricsFormat, metrics?: RunMetrics): MetricsParser {
  switch (format) {
    case 'jsonl':
      return new JsonlParser(metrics ?? new RunMetrics('line'));
    case 'csv':
      return new CsvParser(metrics ?? new RunMetrics('line'));
    case 'trainer-state':
      return new TrainerStateParser(metrics ?? new RunMetrics('entry'));
    case 'tfevents':
      return new TfEventsParser(metrics ?? new RunMetrics('record'));
  }
}

/** The RunMetrics unit name that suits a format's messages. */
export function unitOf(format: MetricsFormat): 'line' | 'record' | 'entry' {
  return format === 'tfevents' ? 'record' : format === 'trainer-state' ? 'entry' : 'line';
}
