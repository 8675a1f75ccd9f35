/**
 * The metrics core: parsing metrics logs (JSONL, CSV, trainer_state.json, TensorBoard event files) into
 * memory-bounded series, following them while a run writes them, and the pure math the curve views need
 * (smoothing, decimation, plateau detection). No `vscode`; the only I/O is RunFeed's, through the Executor it is
 * given.
 */
export { Series, RunMetrics, describeSkipped, describeRestarts, describeX, pointsOf, type Points, type Segment, type Restart, type BadLocation, type RecordUnit } from './series';
export type { MetricsFormat, MetricsParser } from './parser';
export { detectFormat, createParser, tailModeOf, unitOf } from './format';
export { JsonlParser, parseJsonLine } from './jsonl';
export { MAX_LINE_BYTES } from './lines';
export { CsvParser } from './csv';
export { TrainerStateParser, parseTrainerState } from './trainerState';
export { TfEventsParser } from './tfevents';
export { X_KEYS, FALLBACK_X_KEYS, ALL_X_KEYS, TIME_KEYS, toTimeMs } from './fields';
export { MlflowMetricParser, mlflowKeyOf } from './mlflow';
export { crc32c, maskCrc } from './crc32c';
export {
  decideTail,
  nextTailRequest,
  applyTailRead,
  tailReadCommand,
  parseTailOutput,
  headsMatch,
  TAIL_SCRIPT,
  TAIL_HEAD_BYTES,
  DEFAULT_TAIL_MAX_BYTES,
  DEFAULT_TAIL_COMPRESS_ABOVE,
  type TailMode,
  type TailStat,
  type TailState,
  type TailDecision,
  type TailRequest,
  type TailReadResult,
  type TailStep,
} from './tail';
export { MetricsFollower, type FollowUpdate } from './follow';
export { closeIdleParseWorkers } from './parseOffload';
export { emaSmooth } from './smooth';
export { decimateMinMax, type DecimateInput, type DecimateRange, type DecimatedSeries } from './decimate';
export { detectPlateau, metricDirection, type MetricDirection, type PlateauOptions, type PlateauResult } from './plateau';
export { RunFeed, FeedRegistry, type RunFeedOptions, type EvalSource } from './runFeed';
