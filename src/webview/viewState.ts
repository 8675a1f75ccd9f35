/**
 * The webview's own state: the user's view choices (smoothing, zoom range, hidden metrics, x axis, log y, hidden
 * runs, which way is better per metric, each chart's fixed y range and the series hidden on one chart), the plot
 * width, and the restore state the panel serializer gets back after a reload. A pure reducer:
 * each event (the page started, the user changed something, a chart measured its width, the extension sent a
 * message) gives the next state, the messages to post and whether to save. No DOM, so it is unit-tested in node;
 * main.ts only dispatches events and draws.
 */
import type { FromWebview, PanelRestoreState, ToWebview, XRange } from '../shared/metricsProtocol';
import { metricDirection, type PlateauDirection } from '../shared/metricDirection';
import { put } from '../shared/dict';

export type XMode = 'step' | 'wall' | 'relative';

export const DEFAULT_SMOOTHING = 0.6;

/** What the user chose; kept by the webview (vscode.setState) across reloads. */
export interface ViewSettings {
  smoothing: number;
  /** The zoomed step range; null = the whole run. */
  range: XRange | null;
  /** Metrics not shown. */
  hidden: string[];
  xMode: XMode;
  logY: boolean;
  /** Runs (by key) whose curves are not drawn. */
  hiddenRuns: string[];
  /** Which way is better, per metric, where the user flipped the name's default (the plateau hint's direction). */
  directions: Record<string, PlateauDirection>;
  /** Charts (by metric) whose y axis the user fixed; every other chart's range follows its data. */
  yRanges: ChartYRange[];
  /** Series hidden on one chart only: that run's curve on that metric's chart. */
  hiddenSeries: SeriesRef[];
}

/** A fixed y range of one chart. */
export interface ChartYRange {
  metric: string;
  yMin: number;
  yMax: number;
}

/** One run's series on one metric's chart. */
export interface SeriesRef {
  metric: string;
  runKey: string;
}

export interface WebviewState {
  settings: ViewSettings;
  /** The plot width in CSS pixels (what the extension decimates for). */
  width: number;
  restore: PanelRestoreState | undefined;
  /** The last `view` message posted (as JSON): one that would say the same is not posted again. */
  sentView: string;
}

/** What vscode.getState() holds (written by savedState). */
export interface SavedState {
  restore?: PanelRestoreState;
  ui?: ViewSettings;
}

export type WebviewEvent =
  /** The page loaded; its first guess of the plot width. */
  | { type: 'started'; width: number }
  /** A chart measured the plot width (after drawing, or after a resize). */
  | { type: 'measured'; width: number }
  | { type: 'setSmoothing'; value: number }
  | { type: 'zoom'; range: XRange | null }
  | { type: 'showMetric'; key: string; shown: boolean }
  | { type: 'setXMode'; value: XMode }
  | { type: 'setLogY'; value: boolean }
  | { type: 'showRun'; runKey: string; shown: boolean }
  /** The user chose which way is better for a metric (the plateau hint's direction; `off`: no hint). */
  | { type: 'setDirection'; key: string; direction: PlateauDirection }
  /** Fix one chart's y axis to this range, or let it follow the data again (null). */
  | { type: 'setYRange'; metric: string; range: { yMin: number; yMax: number } | null }
  /** Show or hide one run's series on one chart. */
  | { type: 'showSeries'; metric: string; runKey: string; shown: boolean }
  | { type: 'received'; msg: ToWebview };

export interface Step {
  state: WebviewState;
  /** Messages to post to the extension, in order. */
  post: FromWebview[];
  /** Whether to save the state (vscode.setState(savedState(state))). */
  save: boolean;
}

export const DEFAULT_SETTINGS: ViewSettings = {
  smoothing: DEFAULT_SMOOTHING,
  range: null,
  hidden: [],
  xMode: 'step',
  logY: false,
  hiddenRuns: [],
  directions: {},
  yRanges: [],
  hiddenSeries: [],
};

/** Is this a y range a chart can be fixed to (finite, max above min)? */
export function validYRange(yMin: unknown, yMax: unknown): boolean {
  return typeof yMin === 'number' && typeof yMax === 'number' && Number.isFinite(yMin) && Number.isFinite(yMax) && yMax > yMin;
}

/** The fixed y range of a metric's chart, if the user set one. */
export function yRangeOf(settings: ViewSettings, metric: string): ChartYRange | undefined {
  return settings.yRanges.find((r) => r.metric === metric);
}

/** Is this run's series hidden on this metric's chart? */
export function seriesHidden(settings: ViewSettings, metric: string, runKey: string): boolean {
  return settings.hiddenSeries.some((h) => h.metric === metric && h.runKey === runKey);
}

/** Each well-formed entry once (the last of a metric's y ranges wins); anything else is dropped. */
function yRangesOf(v: unknown): ChartYRange[] {
  if (!Array.isArray(v)) return [];
  const out = new Map<string, ChartYRange>();
  for (const r of v) if (isObj(r) && typeof r.metric === 'string' && validYRange(r.yMin, r.yMax)) out.set(r.metric, { metric: r.metric, yMin: r.yMin as number, yMax: r.yMax as number });
  return [...out.values()];
}

function seriesRefsOf(v: unknown): SeriesRef[] {
  if (!Array.isArray(v)) return [];
  const out: SeriesRef[] = [];
  for (const r of v) {
    if (!isObj(r) || typeof r.metric !== 'string' || typeof r.runKey !== 'string') continue;
    const ref = { metric: r.metric, runKey: r.runKey };
    if (!out.some((o) => o.metric === ref.metric && o.runKey === ref.runKey)) out.push(ref);
  }
  return out;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): string[] | undefined => (Array.isArray(v) && v.every((s) => typeof s === 'string') ? [...(v as string[])] : undefined);

/** Settings from what a saved state holds: each field that is well-formed, the default for any other. Total. */
export function settingsOf(ui: unknown): ViewSettings {
  if (!isObj(ui)) return { ...DEFAULT_SETTINGS };
  const s = ui.smoothing;
  const r = ui.range;
  const range =
    isObj(r) && typeof r.xMin === 'number' && typeof r.xMax === 'number' && Number.isFinite(r.xMin) && Number.isFinite(r.xMax) && r.xMax > r.xMin
      ? { xMin: r.xMin, xMax: r.xMax }
      : null;
  return {
    smoothing: typeof s === 'number' && Number.isFinite(s) && s >= 0 && s < 1 ? s : DEFAULT_SMOOTHING,
    range,
    hidden: strings(ui.hidden) ?? [],
    xMode: ui.xMode === 'wall' || ui.xMode === 'relative' || ui.xMode === 'step' ? ui.xMode : 'step',
    logY: ui.logY === true,
    hiddenRuns: strings(ui.hiddenRuns) ?? [],
    directions: directionsOf(ui.directions),
    yRanges: yRangesOf(ui.yRanges),
    hiddenSeries: seriesRefsOf(ui.hiddenSeries),
  };
}

/** The well-formed entries of a saved direction map (metric → lower, higher, off); anything else is dropped. */
function directionsOf(v: unknown): Record<string, PlateauDirection> {
  const out: Record<string, PlateauDirection> = {};
  if (!isObj(v)) return out;
  for (const [k, d] of Object.entries(v)) if (k && (d === 'lower' || d === 'higher' || d === 'off')) put(out, k, d);
  return out;
}

/** The choices after the user picked `direction` for `key`: the name's own default is no choice at all. */
function withDirection(chosen: Readonly<Record<string, PlateauDirection>>, key: string, direction: PlateauDirection): Record<string, PlateauDirection> {
  const out: Record<string, PlateauDirection> = {};
  for (const [k, d] of Object.entries(chosen)) if (k !== key) put(out, k, d);
  if (direction !== (metricDirection(key) ?? 'off')) put(out, key, direction);
  return out;
}

/** The state a page starts with, from what vscode.getState() returned (anything: it is parsed, never trusted). */
export function initialState(saved: unknown, width: number): WebviewState {
  const s = isObj(saved) ? saved : {};
  return {
    settings: settingsOf(s.ui),
    width,
    restore: isObj(s.restore) ? (s.restore as unknown as PanelRestoreState) : undefined,
    sentView: '',
  };
}

export function savedState(state: WebviewState): SavedState {
  return { ...(state.restore ? { restore: state.restore } : {}), ui: state.settings };
}

/** The `view` message for this state. */
export function viewMessage(state: WebviewState): Extract<FromWebview, { type: 'view' }> {
  const { smoothing, range, hidden, directions } = state.settings;
  // Directions only when the user chose any: the presenter computes the plateau hints with them.
  return { type: 'view', width: state.width, range, smoothing, hidden: [...hidden], ...(Object.keys(directions).length ? { directions: { ...directions } } : {}) };
}

/** The `ready` message for this state: the settings go with it, so the first snapshot is computed for them. */
export function readyMessage(state: WebviewState): Extract<FromWebview, { type: 'ready' }> {
  return { ...viewMessage(state), type: 'ready' };
}

/** Post the view when it differs from the last one posted. */
function withView(state: WebviewState): Step {
  const msg = viewMessage(state);
  const text = JSON.stringify(msg);
  if (text === state.sentView) return { state, post: [], save: true };
  return { state: { ...state, sentView: text }, post: [msg], save: true };
}

const toggled = (list: readonly string[], key: string, on: boolean): string[] => (on ? [...new Set([...list, key])] : list.filter((k) => k !== key));

export function reduce(state: WebviewState, event: WebviewEvent): Step {
  const set = (patch: Partial<ViewSettings>): WebviewState => ({ ...state, settings: { ...state.settings, ...patch } });
  switch (event.type) {
    case 'started': {
      const s = { ...state, width: event.width };
      const ready = readyMessage(s);
      return { state: { ...s, sentView: JSON.stringify(viewMessage(s)) }, post: [ready], save: false };
    }
    case 'measured':
      return withView({ ...state, width: event.width });
    case 'setSmoothing':
      return withView(set({ smoothing: event.value }));
    case 'zoom':
      return withView(set({ range: event.range }));
    case 'showMetric':
      return withView(set({ hidden: toggled(state.settings.hidden, event.key, !event.shown) }));
    case 'setXMode':
      return { state: set({ xMode: event.value }), post: [], save: true };
    case 'setLogY':
      return { state: set({ logY: event.value }), post: [], save: true };
    case 'setDirection':
      return withView(set({ directions: withDirection(state.settings.directions, event.key, event.direction) }));
    case 'showRun':
      return { state: set({ hiddenRuns: toggled(state.settings.hiddenRuns, event.runKey, !event.shown) }), post: [], save: true };
    // A chart's y range and its hidden series change only how it draws: nothing for the extension to compute.
    case 'setYRange': {
      const others = state.settings.yRanges.filter((r) => r.metric !== event.metric);
      const r = event.range;
      if (r && !validYRange(r.yMin, r.yMax)) return { state, post: [], save: false };
      return { state: set({ yRanges: r ? [...others, { metric: event.metric, yMin: r.yMin, yMax: r.yMax }] : others }), post: [], save: true };
    }
    case 'showSeries': {
      const others = state.settings.hiddenSeries.filter((h) => !(h.metric === event.metric && h.runKey === event.runKey));
      return { state: set({ hiddenSeries: event.shown ? others : [...others, { metric: event.metric, runKey: event.runKey }] }), post: [], save: true };
    }
    case 'received':
      return received(state, event.msg);
    default: {
      const never: never = event;
      void never;
      return { state, post: [], save: false };
    }
  }
}

function received(state: WebviewState, msg: ToWebview): Step {
  switch (msg.type) {
    case 'snapshot':
      // Only the restore state (the extension's): a snapshot carries no view settings, which are this page's own.
      return { state: { ...state, restore: msg.restore }, post: [], save: true };
    case 'update':
    case 'references':
    case 'values':
    case 'highlight':
    case 'evals':
    case 'empty':
    case 'runConfig':
      return { state, post: [], save: false };
    default: {
      // Compile-time exhaustiveness: a message type added to the protocol and not handled here is a type error. At
      // run time a message of a type this page does not know changes nothing.
      const never: never = msg;
      void never;
      return { state, post: [], save: false };
    }
  }
}
