/**
 * The one message protocol between the extension and the metrics webview (the full panel and the inline view).
 * Types only: imported by both bundles, so nothing here may produce code. Both directions are discriminated
 * unions on `type`; each side switches over them exhaustively.
 *
 * Order: the webview posts `ready` (with its plot width and the user's view settings) → the extension answers with a
 * whole `snapshot` →
 * from then on `update`s carry only what changed (per series: replace or append). Anything that changes which
 * runs or metrics exist, or the decimation range, is a new snapshot.
 *
 * x values on the wire are always steps; the webview maps them to wall or relative time with `t`.
 *
 * One owner per piece of state: the user's view settings (smoothing, zoom range, hidden metrics; x axis, log y,
 * hidden runs, each chart's y range and its hidden series never leave the webview) belong to the webview. It sends them in `ready` and in `view` when they
 * change; the extension computes with them and never sends them back, so a restored panel cannot end up echoing two
 * values to and fro. Runs, statuses and the highlighted checkpoint belong to the extension.
 */
import type { MetricDirection, PlateauDirection } from './metricDirection';

export type TargetKindWire = 'host' | 'pct' | 'docker' | 'pod';

/** Which run, stable across reloads (also what a restored panel keeps in its state). */
export interface RunRefWire {
  hostName: string;
  target: { kind: TargetKindWire; id: string };
  /** Absolute path of the run folder inside the target. */
  runPath: string;
  runName: string;
  /** Absolute paths of its metrics logs. */
  metrics: string[];
  checkpoints: CheckpointWire[];
}

export interface CheckpointWire {
  step: number;
  name: string;
  path: string;
}

export type RunRole = 'primary' | 'compare' | 'reference';

/** A range of steps, inclusive. */
export interface XRange {
  xMin: number;
  xMax: number;
}

/** Decimated points of one metric of one run: steps, raw values, smoothed values and wall times at the same points. */
export interface SeriesChunk {
  key: string;
  x: number[];
  y: number[];
  /** EMA-smoothed values at the same points (equal to `y` when smoothing is 0). */
  s: number[];
  /** Wall time, ms since the epoch, at the same points; absent when the log has no time field. NaN where unknown. */
  t?: number[];
  /** Positions in `x` where a new segment begins (a resumed run); a line is never drawn across them. */
  segmentStarts: number[];
  /** Points in the whole series (not only those sent). */
  total: number;
  /**
   * When points were decimated (each stands for a bucket of the series, as its last point): per point, the bucket's
   * smallest and largest raw value, drawn as a translucent band under the curve (equal to `y` for a point that
   * stands only for itself). Absent when every point was sent as itself.
   */
  lo?: number[];
  hi?: number[];
}

/** `replace` swaps the webview's copy for this chunk; `append` adds points after the ones it has. */
export interface SeriesUpdate extends SeriesChunk {
  mode: 'replace' | 'append';
}

/** A metric that has stopped improving (from detectPlateau on the smoothed series of the primary run). */
export interface PlateauHint {
  key: string;
  /** Which way counts as better for this hint (the name's, or the user's choice in the webview). */
  direction: MetricDirection;
  /** The first step from which the metric never again improved by more than `fraction` on its best so far. */
  flatSince: number;
  /** The smoothed value at `flatSince` (the best so far there: the hint never names a best newer than that). */
  flatValue: number;
  /** The best smoothed value of the segment, and its step (at or after `flatSince`, within `fraction` of it). */
  best: number;
  bestStep: number;
  window: number;
  fraction: number;
}

/**
 * The connection to a run's host as a panel shows it (src/core/metrics/follow/liveness.ts), with durations instead of
 * times: `forMs` is how long the state has lasted when the message was built (the webview's clock may differ from
 * the extension host's, e.g. in a remote window). Remote text (`reason`, `lastError`): shown as text only.
 */
export type LinkWire =
  | { state: 'connecting'; forMs: number; attempt: number }
  | { state: 'connected' }
  | { state: 'reconnecting'; forMs: number; attempt: number; lastError?: string }
  | { state: 'unreachable'; forMs: number; reason: string; attempt: number }
  | { state: 'refused'; kind: 'auth-failed' | 'host-key-unknown' | 'host-key-mismatch'; forMs: number; reason: string }
  /** The host is no longer in the settings: the run is not polled any more. */
  | { state: 'removed'; reason: string };

/** What the view shows about a run besides its points. */
export interface RunHeader {
  runKey: string;
  /** Short name, e.g. the run folder. Remote text: always shown as text, never as HTML. */
  label: string;
  /** `host/target`, for the legend's tooltip. */
  where: string;
  role: RunRole;
  /** Palette index. */
  color: number;
  /** `following`, `loading…`, or why it cannot be read (e.g. `missing: /workspace/logs/train.jsonl`). */
  status: string;
  /** describeSkipped(): how many bad lines and where the first was; undefined when none. */
  skipped?: string;
  /** Where series restarted from an earlier step and how many earlier points the later process replaced. */
  resumed?: string;
  badLines: number;
  latestStep?: number;
  /** Latest value per metric key (of the last point), for the inline header and status lines. */
  latest: Record<string, number>;
  plateaus: PlateauHint[];
  /** What the x of the run's points is (`step`, `epoch`, `line number`, or per log); shown when not `step`. */
  xAxis?: string;
  /** Columns of the run's text logs the user can choose as x instead (setXColumn). */
  xChoices?: string[];
  /** The column chosen as x; null while each log uses its own (null, not absent: updates are merged). */
  xPick?: string | null;
  /** The connection to the run's host. */
  link: LinkWire;
  /** How long ago the run last wrote one of its logs (remote clock) when the message was built; null until known. */
  loggedAgoMs: number | null;
  /** A run that has not written for this long is shown as stopped logging. */
  stoppedAfterMs: number;
  /**
   * The earliest wall time (ms) in the run's logs: where the relative time axis starts. Sent because a zoomed view
   * holds only the zoom's points, whose first is not the run's start. Absent when the logs have no time.
   */
  startTime?: number;
}

export interface RunSnapshot extends RunHeader {
  checkpoints: CheckpointWire[];
  series: SeriesChunk[];
  /** The run's evals known so far (more arrive as `evals` messages). */
  evals: EvalPointWire[];
}

export type EvalStateWire = 'pending' | 'running' | 'passed' | 'failed' | 'lost';

/**
 * One eval of a run, drawn as a point at its checkpoint's step on the chart of each metric it measured (a chart
 * of its own for a metric the training log does not have). Remote and user text: shown as text only.
 */
export interface EvalPointWire {
  id: string;
  profile: string;
  step: number;
  /** The checkpoint's name, e.g. `step_20000`. */
  checkpoint: string;
  /** ms since the epoch. */
  startedAt: number;
  state: EvalStateWire;
  /** Metric → value: the last value of each metric the eval printed (empty until its results are recorded). */
  values: Record<string, number>;
}

export interface RunUpdate extends RunHeader {
  series: SeriesUpdate[];
}

/** A horizontal line on one metric's chart, from the workspace references file. */
export interface ReferenceLine {
  /** Stable within the file: index-free, so deleting one never removes another. */
  id: string;
  metric: string;
  value: number;
  label: string;
  source: string;
}

/** One row of "values at this x". */
export interface ValueRow {
  runKey: string;
  metric: string;
  /** The step of the nearest point (not the cursor's x). */
  step: number;
  value: number;
  smoothed: number;
  /** The reference run's value of the same metric at (nearest) the same step, when there is a reference run. */
  referenceValue?: number;
}

export type ViewMode = 'panel' | 'inline';

/** Extension → webview. */
export type ToWebview =
  | {
      type: 'snapshot';
      mode: ViewMode;
      title: string;
      runs: RunSnapshot[];
      references: ReferenceLine[];
      /** Step of the checkpoint highlighted from the tree. */
      highlight: number | null;
      /** What the webview should keep in its state so the panel can be restored after a reload. */
      restore: PanelRestoreState;
    }
  | { type: 'update'; runs: RunUpdate[] }
  | { type: 'references'; lines: ReferenceLine[] }
  | { type: 'values'; seq: number; x: number; rows: ValueRow[] }
  | { type: 'highlight'; step: number | null; rows: ValueRow[] }
  /** A run's evals changed (one started, finished, or was found on the remote): the whole list for that run. */
  | { type: 'evals'; runKey: string; evals: EvalPointWire[] }
  /** Nothing to show (the inline view before a run is selected or pinned). */
  | { type: 'empty'; message: string }
  /**
   * The primary run's config files (config.yaml/.json, hparams.yaml, args.json: core/runs/config.ts configSummary),
   * as text lines, sent once after the first snapshot of a full panel: shown collapsed under the header. Remote text.
   */
  | { type: 'runConfig'; runKey: string; lines: string[] };

/** Webview → extension. Validated on arrival (see src/extension/metrics/validate.ts). */
export type FromWebview =
  /** The page is up, with the view it shows (a restored page: the settings it kept). */
  | ({ type: 'ready' } & ViewWire)
  /** The view changed (the user's settings, or the plot width). */
  | ({ type: 'view' } & ViewWire)
  | { type: 'hover'; seq: number; x: number }
  | { type: 'selectCheckpoint'; step: number }
  | { type: 'addRun' }
  | { type: 'removeRun'; runKey: string }
  /** Use this column as the x of the run's text logs; null: each log's own choice again. */
  | { type: 'setXColumn'; runKey: string; key: string | null }
  | { type: 'setReferenceRun'; runKey: string | null }
  | { type: 'addReferenceLine'; metric: string; value: number; label: string; source: string }
  | { type: 'removeReferenceLine'; id: string }
  | { type: 'openPanel' }
  /** Open the table of the primary run's evals. */
  | { type: 'showEvalTable' }
  /** From the eval table page: put the table on the clipboard as CSV or Markdown. */
  | { type: 'copyEvalTable'; format: 'csv' | 'markdown' }
  /** From the checkpoint compare page (src/extension/inspect/compareView.ts). */
  | { type: 'compare'; action: CompareAction }
  /**
   * Save one chart's series as CSV, at full resolution (the extension has them; the webview only the decimated
   * points): the metric and the runs whose series the chart shows, in its order. The extension asks where.
   */
  | { type: 'exportCsv'; metric: string; runKeys: string[] }
  /** Save one chart as a PNG: the canvas's pixels, base64 (without the `data:` prefix). The extension asks where. */
  | { type: 'exportPng'; metric: string; png: string };

/** What the compare page asks: swap A and B, pick another B (host → target → run → checkpoint), read both again. */
export type CompareAction = 'swap' | 'changeB' | 'retry';

/**
 * The plot width in CSS pixels, the visible step range (null = all), smoothing weight, metrics not shown, and the
 * plateau direction the user chose for some metrics.
 */
export interface ViewWire {
  width: number;
  range: XRange | null;
  smoothing: number;
  hidden: string[];
  /** The user's choice of which way is better per metric (the plateau hint's direction); absent: the names' own. */
  directions?: Record<string, PlateauDirection>;
}

/** Kept by the webview (vscode.setState) and handed back to the panel serializer after a reload. */
export interface PanelRestoreState {
  version: 1;
  primary: RunRefWire;
  others: { run: RunRefWire; role: 'compare' | 'reference' }[];
}

/** Extension → the eval table page: the copy is on the clipboard. */
export type EvalTableToWebview = { type: 'copied'; format: 'csv' | 'markdown' };
