/// <reference lib="dom" />
/**
 * The metrics webview (the full panel and the compact inline view): a toolbar, a legend of runs and reference
 * lines, and a grid with one chart per metric. It holds no truth of its own: it draws what the extension sent
 * (MetricsStore) and reports what the user did. Remote strings (run names, metric keys, statuses) are only
 * ever set as text.
 */
import type { FromWebview, ToWebview, ValueRow } from '../shared/metricsProtocol';
import { xLabel } from '../shared/xLabel';
import { MetricChart, type ChartHost, type UiState } from './metricChart';
import { MetricsStore, evalMetricKeys, formatValue } from './store';
import { readTheme, runColor, type Theme } from './theme';
import { liveness } from './liveness';
import { panelXExtent } from './panelRange';
import { closeOpenPopups, popup } from './dom';
import { initialState, reduce, savedState, type SavedState, type WebviewEvent, type XMode } from './viewState';
import { displayName, displayText } from '../shared/display';

interface VsCodeApi {
  postMessage(msg: FromWebview): void;
  getState(): SavedState | undefined;
  setState(state: SavedState): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

// A failure in here is otherwise invisible (the webview's console is not the extension's log): keep the first
// one on the body, where a test or a developer inspecting the webview finds it.
window.addEventListener('error', (e) => {
  document.body.dataset.error ??= String(e.error?.stack ?? e.message).slice(0, 2000);
});

const vscode = acquireVsCodeApi();
const saved: unknown = vscode.getState();
const store = new MetricsStore();
const mode = document.body.dataset.mode === 'inline' ? 'inline' : 'panel';
let theme: Theme = readTheme();
/** The user's choices and what the extension was told (viewState.ts); changed only through dispatch. */
let state = initialState(saved, 0);
const ui: UiState = {
  smoothing: state.settings.smoothing,
  range: state.settings.range,
  xMode: state.settings.xMode,
  logY: state.settings.logY,
  hiddenRuns: new Set(state.settings.hiddenRuns),
  directions: state.settings.directions,
  xExtent: undefined,
  mode,
  yRanges: state.settings.yRanges,
  hiddenSeries: state.settings.hiddenSeries,
  hoverX: null,
  rows: [],
};
let hoverSeq = 0;
/** Values at the checkpoint highlighted from the tree: shown whenever the cursor is not on a chart. */
let highlightRows: ValueRow[] = [];
let hoverKey: string | null = null;

/** Apply an event to the state: save it and post what the reducer says, and mirror it into what the charts read. */
function dispatch(event: WebviewEvent): void {
  const step = reduce(state, event);
  state = step.state;
  ui.smoothing = state.settings.smoothing;
  ui.range = state.settings.range;
  ui.xMode = state.settings.xMode;
  ui.logY = state.settings.logY;
  ui.hiddenRuns = new Set(state.settings.hiddenRuns);
  ui.directions = state.settings.directions;
  ui.yRanges = state.settings.yRanges;
  ui.hiddenSeries = state.settings.hiddenSeries;
  if (step.save) vscode.setState(savedState(state));
  for (const m of step.post) post(m);
}

const post = (m: FromWebview): void => vscode.postMessage(m);

// ---- Layout ------------------------------------------------------------------------------------------

const app = document.getElementById('app')!;
const header = h('header', 'top');
const titleEl = h('h1', 'title');
const latestEl = h('span', 'latest');
latestEl.dataset.latest = '';
const toolbar = h('div', 'toolbar');
const legend = h('div', 'legend');
legend.setAttribute('role', 'list');
legend.setAttribute('aria-label', 'Legend');
const statusEl = h('div', 'status');
// The primary run's host and logging, always in sight (issue 17: a host that is gone must not look like a stalled run).
const livenessEl = h('div', 'liveness');
const connectionEl = h('span', 'connection');
connectionEl.setAttribute('role', 'status');
const activityEl = h('span', 'activity');
livenessEl.append(connectionEl, activityEl);
/** When each run's header last arrived (this page's clock): durations on the wire count from then. */
const headerAt = new Map<string, number>();
const emptyEl = h('div', 'empty');
const grid = h('div', 'grid');
header.append(titleEl, latestEl, toolbar);
// The primary run's config files (a full panel only), collapsed: filled by a `runConfig` message.
const configEl = h('details', 'run-config');
const configSummaryEl = h('summary');
configSummaryEl.textContent = 'Config';
const configText = h('pre');
configEl.append(configSummaryEl, configText);
configEl.hidden = true;
app.append(header, livenessEl, configEl, legend, statusEl, emptyEl, grid);

const charts = new Map<string, MetricChart>();

const host: ChartHost = {
  store,
  ui,
  theme: () => theme,
  hover(key, axisX) {
    if (axisX === null) {
      hoverKey = null;
      ui.hoverX = null;
      ui.rows = highlightRows;
      redrawAll(false);
      return;
    }
    hoverKey = key;
    ui.hoverX = axisX;
    const step = store.stepAt(store.primary, key, axisX, ui.xMode);
    if (step !== undefined) post({ type: 'hover', seq: ++hoverSeq, x: step });
    redrawAll(false);
  },
  zoom(key, a, b) {
    const s0 = store.stepAt(store.primary, key, a, ui.xMode);
    const s1 = store.stepAt(store.primary, key, b, ui.xMode);
    if (s0 === undefined || s1 === undefined || !(s1 > s0)) return;
    dispatch({ type: 'zoom', range: { xMin: s0, xMax: s1 } });
  },
  selectCheckpoint(step) {
    post({ type: 'selectCheckpoint', step });
  },
  showEvalTable() {
    post({ type: 'showEvalTable' });
  },
  setDirection(key, direction) {
    // The presenter judges plateaus again with it and sends a snapshot; the switch shows the choice at once.
    dispatch({ type: 'setDirection', key, direction });
    charts.get(key)?.renderText();
  },
  setYRange(key, range) {
    dispatch({ type: 'setYRange', metric: key, range });
    charts.get(key)?.render();
  },
  showSeries(key, runKey, shown) {
    dispatch({ type: 'showSeries', metric: key, runKey, shown });
    charts.get(key)?.render();
  },
  exportCsv(key, runKeys) {
    post({ type: 'exportCsv', metric: key, runKeys });
  },
  exportPng(key, png) {
    post({ type: 'exportPng', metric: key, png });
  },
};

function h<K extends keyof HTMLElementTagNameMap>(tag: K, className = ''): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (className) e.className = className;
  return e;
}

function button(label: string, onClick: () => void, title = label): HTMLButtonElement {
  const b = h('button');
  b.type = 'button';
  b.textContent = label;
  b.title = title;
  b.addEventListener('click', onClick);
  return b;
}

// ---- Toolbar -----------------------------------------------------------------------------------------

const metricsMenu = popup('metrics-menu');
const metricsSummary = h('summary');
metricsSummary.textContent = 'Metrics';
const metricsList = h('div', 'metrics-list');
metricsMenu.append(metricsSummary, metricsList);

const smoothingInput = h('input');
smoothingInput.type = 'range';
smoothingInput.min = '0';
smoothingInput.max = '0.99';
smoothingInput.step = '0.01';
smoothingInput.value = String(state.settings.smoothing);
smoothingInput.setAttribute('aria-label', 'Smoothing');
const smoothingValue = h('span', 'smoothing-value');
smoothingValue.textContent = state.settings.smoothing.toFixed(2);
smoothingInput.addEventListener('input', () => (smoothingValue.textContent = Number(smoothingInput.value).toFixed(2)));
smoothingInput.addEventListener('change', () => dispatch({ type: 'setSmoothing', value: Number(smoothingInput.value) }));

const logYInput = h('input');
logYInput.type = 'checkbox';
logYInput.checked = ui.logY;
logYInput.addEventListener('change', () => {
  dispatch({ type: 'setLogY', value: logYInput.checked });
  redrawAll(true);
});

const xModeSelect = h('select');
xModeSelect.setAttribute('aria-label', 'X axis');
for (const [value, label] of [['step', 'Step'], ['wall', 'Wall time'], ['relative', 'Relative time']] as const) {
  const o = h('option');
  o.value = value;
  o.textContent = label;
  xModeSelect.append(o);
}
xModeSelect.value = ui.xMode;
xModeSelect.addEventListener('change', () => {
  dispatch({ type: 'setXMode', value: xModeSelect.value as XMode });
  renderHeader();
  redrawAll(true);
});

// Which column of the primary run's text logs is x (Keras' `epoch`, SB3's `time/total_timesteps`, any other):
// the extension re-reads the logs with it (setXColumn); '' is each log's own choice.
const xColumnSelect = h('select');
xColumnSelect.setAttribute('aria-label', 'X column');
xColumnSelect.title = 'The column of the run\'s logs used as x (event files and MLflow metrics always use their step)';
let xColumnOptions = '';
xColumnSelect.addEventListener('change', () => {
  const p = store.primary;
  if (p) post({ type: 'setXColumn', runKey: p.runKey, key: xColumnSelect.value === '' ? null : xColumnSelect.value });
});

function renderXColumn(): void {
  const p = store.primary;
  const choices = p?.xChoices ?? [];
  const own = (p?.xPick ?? null) === null ? (p?.xAxis ?? 'step') : 'own choice';
  const signature = JSON.stringify([own, choices, p?.xPick ?? null]);
  if (signature !== xColumnOptions) {
    xColumnOptions = signature;
    xColumnSelect.replaceChildren();
    const first = h('option');
    first.value = '';
    first.textContent = `Log's own (${own})`;
    xColumnSelect.append(first);
    for (const c of p?.xPick && !choices.includes(p.xPick) ? [p.xPick, ...choices] : choices) {
      const o = h('option');
      o.value = c;
      o.textContent = c;
      xColumnSelect.append(o);
    }
  }
  xColumnSelect.value = p?.xPick ?? '';
  xColumnSelect.disabled = choices.length === 0 && (p?.xPick ?? null) === null;
}

const resetZoom = button('Reset zoom', () => dispatch({ type: 'zoom', range: null }));

const labelled = (text: string, control: HTMLElement, extra?: HTMLElement): HTMLLabelElement => {
  const l = h('label', 'control');
  const span = h('span');
  span.textContent = text;
  l.append(span, control);
  if (extra) l.append(extra);
  return l;
};

// Reference line form: metric, value, label, source.
const refForm = h('form', 'ref-form');
refForm.setAttribute('aria-label', 'Add reference line');
const refMetric = h('select');
refMetric.name = 'metric';
refMetric.setAttribute('aria-label', 'Reference metric');
const refValue = h('input');
refValue.name = 'value';
refValue.type = 'number';
refValue.step = 'any';
refValue.placeholder = 'value';
refValue.setAttribute('aria-label', 'Reference value');
const refLabel = h('input');
refLabel.name = 'label';
refLabel.placeholder = 'label';
refLabel.setAttribute('aria-label', 'Reference label');
const refSource = h('input');
refSource.name = 'source';
refSource.placeholder = 'source';
refSource.setAttribute('aria-label', 'Reference source');
const refAdd = h('button');
refAdd.type = 'submit';
refAdd.textContent = 'Add reference';
refForm.append(refMetric, refValue, refLabel, refSource, refAdd);
refForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const value = Number(refValue.value);
  if (!refMetric.value || refValue.value.trim() === '' || !Number.isFinite(value) || !refLabel.value.trim()) return;
  post({ type: 'addReferenceLine', metric: refMetric.value, value, label: refLabel.value, source: refSource.value });
  refValue.value = '';
  refLabel.value = '';
  refSource.value = '';
});

if (mode === 'panel') {
  toolbar.append(
    metricsMenu,
    labelled('Smoothing', smoothingInput, smoothingValue),
    labelled('Log y', logYInput),
    labelled('X', xModeSelect),
    labelled('X column', xColumnSelect),
    resetZoom,
    button('Add run…', () => post({ type: 'addRun' }), 'Compare with another run'),
    button('Eval results', () => post({ type: 'showEvalTable' }), 'Open the table of this run\'s evals (copy as CSV or Markdown)'),
    refForm,
  );
} else {
  toolbar.append(button('Open panel', () => post({ type: 'openPanel' }), 'Open the full metrics panel'));
}

// ---- Rendering ---------------------------------------------------------------------------------------

function renderHeader(): void {
  titleEl.textContent = store.title;
  const p = store.primary;
  latestEl.textContent = p?.latestStep !== undefined ? `${xLabel(p.xAxis)} ${formatValue(p.latestStep)}` : '';
  const statuses: string[] = [];
  const now = Date.now();
  for (const run of store.runs) {
    if (run.role !== 'primary' && run.link.state !== 'connected') {
      statuses.push(`${run.label}: ${liveness(run, run.where.split('/')[0], now - (headerAt.get(run.runKey) ?? now), now).connection.text}`);
    }
    // While its host cannot be reached, what the last round failed at is that: said once, by the connection line
    // (the liveness banner for the primary run, the line above for the others), not again as the run's status.
    if (run.status !== 'following' && run.link.state === 'connected') statuses.push(`${run.label}: ${run.status}`);
    if (run.skipped) statuses.push(`${run.label}: ${run.skipped}`);
    if (run.resumed) statuses.push(`${run.label}: ${run.resumed}`);
    if (run.xAxis !== undefined && run.xAxis !== 'step') statuses.push(`${run.label}: x: ${run.xAxis}`);
    if (ui.xMode !== 'step' && run.series.size > 0 && !store.hasTime(run)) statuses.push(`${run.label}: no time field in its log, so nothing on a time axis`);
  }
  statusEl.textContent = statuses.map(displayText).join('\n');
  statusEl.hidden = statuses.length === 0;
  resetZoom.disabled = state.settings.range === null;
  renderXColumn();
  renderLiveness();
}

/** Connection and activity of the primary run (again every second: the ages grow without messages). */
function renderLiveness(): void {
  const p = store.primary;
  livenessEl.hidden = !p;
  if (!p) return;
  const now = Date.now();
  const view = liveness(p, p.where.split('/')[0], now - (headerAt.get(p.runKey) ?? now), now);
  connectionEl.textContent = view.connection.text;
  connectionEl.dataset.state = view.connection.state;
  activityEl.textContent = view.activity.text;
  activityEl.dataset.activity = view.activity.activity;
  activityEl.hidden = view.activity.activity === 'none';
}
setInterval(renderLiveness, 1000);

function renderLegend(): void {
  legend.replaceChildren();
  for (const run of store.runs) {
    const item = h('div', `legend-item run ${run.role}`);
    item.setAttribute('role', 'listitem');
    item.classList.toggle('off', ui.hiddenRuns.has(run.runKey));
    const toggle = h('button', 'legend-toggle');
    toggle.type = 'button';
    toggle.setAttribute('aria-pressed', String(!ui.hiddenRuns.has(run.runKey)));
    const sw = h('span', 'swatch');
    sw.style.backgroundColor = runColor(theme, run.color);
    const name = h('span', 'legend-label');
    name.textContent = run.label;
    const role = h('span', 'legend-role');
    role.textContent = run.role === 'primary' ? '' : run.role === 'reference' ? 'reference run' : 'compared';
    toggle.append(sw, name, role);
    toggle.title = `${run.label} · ${run.where} — click to show or hide`;
    toggle.addEventListener('click', () => {
      dispatch({ type: 'showRun', runKey: run.runKey, shown: ui.hiddenRuns.has(run.runKey) });
      renderLegend();
      redrawAll(true);
    });
    item.append(toggle);
    if (mode === 'panel' && run.role !== 'primary') {
      item.append(
        button(run.role === 'reference' ? '★' : '☆', () => post({ type: 'setReferenceRun', runKey: run.role === 'reference' ? null : run.runKey }), run.role === 'reference' ? 'Stop using as the reference run' : 'Use as the reference run'),
        button('×', () => post({ type: 'removeRun', runKey: run.runKey }), 'Remove from this panel'),
      );
    }
    legend.append(item);
  }
  // One entry per eval metric of each shown run: the series its points form.
  for (const run of store.runs) {
    if (ui.hiddenRuns.has(run.runKey)) continue;
    for (const key of evalMetricKeys(run)) {
      const withValue = run.evals.filter((e) => e.values[key] !== undefined);
      const item = h('div', 'legend-item eval-series');
      item.setAttribute('role', 'listitem');
      item.dataset.metric = key;
      const sw = h('span', 'eval-swatch');
      sw.style.backgroundColor = runColor(theme, run.color);
      const text = h('span', 'legend-label');
      const profiles = [...new Set(withValue.map((e) => e.profile))].join(', ');
      text.textContent = `eval ${displayName(key)} (${displayName(profiles)}): ${withValue.length} point${withValue.length === 1 ? '' : 's'}${store.runs.length > 1 ? ` · ${run.label}` : ''}`;
      item.title = text.textContent; // the inline view's one-line legend may cut it
      item.append(sw, text);
      legend.append(item);
    }
  }
  for (const ref of store.references) {
    const item = h('div', 'legend-item reference-line');
    item.setAttribute('role', 'listitem');
    const text = h('span', 'legend-label');
    text.textContent = `${ref.label}: ${displayName(ref.metric)} = ${formatValue(ref.value)}${ref.source ? ` (${ref.source})` : ''}`;
    item.append(h('span', 'ref-swatch'), text);
    if (mode === 'panel') item.append(button('×', () => post({ type: 'removeReferenceLine', id: ref.id }), 'Delete this reference line'));
    legend.append(item);
  }
}

function renderMetricsMenu(keys: string[]): void {
  metricsList.replaceChildren();
  refMetric.replaceChildren();
  for (const key of keys) {
    const l = h('label', 'metric-option');
    const box = h('input');
    box.type = 'checkbox';
    box.checked = !state.settings.hidden.includes(key);
    box.addEventListener('change', () => dispatch({ type: 'showMetric', key, shown: box.checked }));
    const span = h('span');
    span.textContent = displayName(key);
    l.append(box, span);
    metricsList.append(l);
    const o = h('option');
    o.value = key;
    o.textContent = displayName(key);
    refMetric.append(o);
  }
}

/** Rebuild the grid (which charts exist) and redraw. `full`: datasets too; else only overlays and text. */
function redrawAll(full: boolean): void {
  if (full) {
    const keys = store.metricKeys().filter((k) => !state.settings.hidden.includes(k));
    for (const [key, chart] of charts) {
      if (!keys.includes(key)) {
        chart.destroy();
        charts.delete(key);
      }
    }
    // One x range for all of them (panelRange.ts), set before any chart draws.
    ui.xExtent = panelXExtent(store, keys, ui.xMode, ui.hiddenRuns);
    for (const key of keys) if (!charts.has(key)) charts.set(key, new MetricChart(grid, key, host));
    // Keep the grid in metric order.
    keys.forEach((k) => grid.append(charts.get(k)!.el));
    for (const c of charts.values()) c.render();
  } else {
    for (const c of charts.values()) {
      c.renderText();
      c.requestDraw();
    }
  }
}

function currentWidth(): number {
  const first = charts.values().next().value as MetricChart | undefined;
  if (first && first.plotWidth > 10) return first.plotWidth;
  // Before any chart exists: one grid cell minus the y axis.
  const w = grid.clientWidth || window.innerWidth;
  const min = mode === 'inline' ? 220 : 360;
  return Math.max(50, Math.floor(w / Math.max(1, Math.floor(w / min))) - 60);
}


function onValues(rows: ValueRow[]): void {
  ui.rows = rows;
  for (const c of charts.values()) c.renderText();
}

window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
  const msg = event.data;
  if (!msg || typeof msg !== 'object' || typeof msg.type !== 'string') return;
  dispatch({ type: 'received', msg });
  switch (msg.type) {
    case 'snapshot': {
      for (const r of msg.runs) headerAt.set(r.runKey, Date.now());
      store.apply(msg);
      smoothingInput.value = String(state.settings.smoothing);
      smoothingValue.textContent = state.settings.smoothing.toFixed(2);
      emptyEl.hidden = true;
      renderMetricsMenu(store.metricKeys());
      renderHeader();
      renderLegend();
      redrawAll(true);
      document.body.dataset.ready = 'true';
      document.body.dataset.evals = String(store.runs.reduce((n, r) => n + r.evals.length, 0));
      // The real plot width is known once charts exist; ask again if it differs from the first guess.
      dispatch({ type: 'measured', width: currentWidth() });
      break;
    }
    case 'update': {
      for (const r of msg.runs) headerAt.set(r.runKey, Date.now());
      const what = store.apply(msg);
      if (what === 'all') renderMetricsMenu(store.metricKeys());
      renderHeader();
      redrawAll(true);
      document.body.dataset.updates = String(Number(document.body.dataset.updates ?? '0') + 1);
      break;
    }
    case 'references':
      store.apply(msg);
      renderLegend();
      redrawAll(true);
      break;
    case 'evals':
      if (store.apply(msg) === 'none') break;
      renderMetricsMenu(store.metricKeys());
      renderLegend();
      redrawAll(true);
      document.body.dataset.evals = String(store.runs.reduce((n, r) => n + r.evals.length, 0));
      break;
    case 'values':
      if (msg.seq === hoverSeq && hoverKey !== null) onValues(msg.rows);
      break;
    case 'highlight':
      store.apply(msg);
      highlightRows = msg.rows;
      if (hoverKey === null) onValues(msg.rows);
      redrawAll(false);
      break;
    case 'empty':
      store.runs = [];
      for (const c of charts.values()) c.destroy();
      charts.clear();
      emptyEl.textContent = msg.message;
      emptyEl.hidden = false;
      legend.replaceChildren();
      titleEl.textContent = '';
      latestEl.textContent = '';
      statusEl.hidden = true;
      livenessEl.hidden = true;
      break;
    case 'runConfig':
      configSummaryEl.textContent = msg.lines[0] ?? 'Config';
      configText.textContent = msg.lines.slice(1).join('\n');
      configEl.hidden = false;
      document.body.dataset.config = 'shown';
      break;
    default: {
      // Compile-time exhaustiveness (a message type added to the protocol must be handled here); at run time an
      // unknown type is ignored.
      const never: never = msg;
      void never;
    }
  }
});

// Re-read colours when the theme changes (VS Code swaps the body's class).
new MutationObserver(() => {
  theme = readTheme();
  renderLegend();
  redrawAll(true);
}).observe(document.body, { attributes: true, attributeFilter: ['class'] });

// Resizes change how many points the extension should send.
let resizeTimer: ReturnType<typeof setTimeout> | undefined;
new ResizeObserver(() => {
  if (resizeTimer) clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => dispatch({ type: 'measured', width: currentWidth() }), 250);
}).observe(grid);

closeOpenPopups(document);
statusEl.hidden = true;
emptyEl.hidden = true;
dispatch({ type: 'started', width: currentWidth() });
