/**
 * The metrics core: parsing metrics logs (JSONL, CSV, trainer_state.json, TensorBoard event files) into
 * memory-bounded series, following them while a run writes them, and the pure math the curve views need
 * (smoothing, decimation, plateau detection). No `vscode`; the only I/O is RunFeed's, through the Executor it is
 * given.
 */
export { Series, RunMetrics, describeSkipped, describeRestarts, describeX, pointsOf, type Points, type Segment, type Restart, type BadLocation, type RecordUnit } from './series/series';
export type { MetricsFormat, MetricsParser } from './formats/parser';
export { detectFormat, createParser, tailModeOf, unitOf } from './formats/format';
export { JsonlParser, parseJsonLine } from './formats/jsonl';
export { MAX_LINE_BYTES } from './formats/lines';
export { CsvParser } from './formats/csv';
export { TrainerStateParser, parseTrainerState } from './formats/trainerState';
export { TfEventsParser } from './formats/tfevents';
export { X_KEYS, FALLBACK_X_KEYS, ALL_X_KEYS, TIME_KEYS, toTimeMs } from './formats/fields';
export { MlflowMetricParser, mlflowKeyOf } from './formats/mlflow';
export { crc32c, maskCrc } from './formats/crc32c';
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
} from './follow/tail';
export { MetricsFollower, type FollowUpdate } from './follow/follow';
export { closeIdleParseWorkers } from './formats/parseOffload';
export { emaSmooth } from './series/smooth';
export { decimateMinMax, type DecimateInput, type DecimateRange, type DecimatedSeries } from './series/decimate';
export { detectPlateau, metricDirection, type MetricDirection, type PlateauOptions, type PlateauResult } from './series/plateau';
export { RunFeed, FeedRegistry, type RunFeedOptions, type EvalSource } from './follow/runFeed';
