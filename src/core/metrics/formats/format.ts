/** Which parser reads which file, and how each format is followed while a run writes it. */
import { CsvParser } from './csv';
import { JsonlParser } from './jsonl';
import { MlflowMetricParser } from './mlflow';
import type { MetricsFormat, MetricsParser } from './parser';
import { RunMetrics } from '../series/series';
import { TfEventsParser } from './tfevents';
import { TrainerStateParser } from './trainerState';

/**
 * The format of a metrics log, by file name (the same names discovery's isMetricsLog accepts, and `.ndjson`):
 * `*.jsonl`, `*.ndjson` → jsonl; `*.csv` and Keras' `training.log` (CSVLogger's documented name) → csv;
 * `trainer_state.json` → trainer-state; `events.out.tfevents.*` → tfevents; any other file below
 * `<runPath>/metrics/` → mlflow (discovery lists such files only for an MLflow run, a folder with `meta.yaml`).
 * Undefined for anything else.
 */
export function detectFormat(path: string, runPath?: string): MetricsFormat | undefined {
  const name = path.slice(path.lastIndexOf('/') + 1);
  if (/\.(jsonl|ndjson)$/i.test(name)) return 'jsonl';
  if (/\.csv$/i.test(name) || name === 'training.log') return 'csv';
  if (name === 'trainer_state.json') return 'trainer-state';
  if (name.startsWith('events.out.tfevents.')) return 'tfevents';
  if (runPath !== undefined && path.startsWith(`${runPath === '/' ? '' : runPath}/metrics/`)) return 'mlflow';
  return undefined;
}

/**
 * How a live file of this format changes: `append` logs only grow (read the new bytes), `whole` files are
 * rewritten in full (read everything again whenever size or mtime change).
 */
export function tailModeOf(format: MetricsFormat): 'append' | 'whole' {
  return format === 'trainer-state' ? 'whole' : 'append';
}

/**
 * A fresh incremental parser writing into `metrics` (a new RunMetrics when none is given). `key` names the one
 * metric of an MLflow metric file (see mlflowKeyOf); other formats carry their keys inside.
 */
export function createParser(format: MetricsFormat, metrics?: RunMetrics, key = 'value'): MetricsParser {
  switch (format) {
    case 'jsonl':
      return new JsonlParser(metrics ?? new RunMetrics('line'));
    case 'csv':
      return new CsvParser(metrics ?? new RunMetrics('line'));
    case 'trainer-state':
      return new TrainerStateParser(metrics ?? new RunMetrics('entry'));
    case 'tfevents':
      return new TfEventsParser(metrics ?? new RunMetrics('record'));
    case 'mlflow':
      return new MlflowMetricParser(metrics ?? new RunMetrics('line'), key);
  }
}

/** The RunMetrics unit name that suits a format's messages. */
export function unitOf(format: MetricsFormat): 'line' | 'record' | 'entry' {
  return format === 'tfevents' ? 'record' : format === 'trainer-state' ? 'entry' : 'line';
}
