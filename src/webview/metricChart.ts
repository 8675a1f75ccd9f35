/// <reference lib="dom" />
/**
 * One small chart per metric: chart.js with no animation and no parsing (points arrive decimated), the
 * smoothed curve of every shown run over its raw curve drawn faint, and an overlay drawn on the canvas:
 * reference lines, faint checkpoint markers (the highlighted one stronger), the shared cursor line and the
 * plateau's start. Checkpoint markers also get thin buttons over the canvas so they can be clicked (and
 * reached by keyboard). Evals of the shown runs are points (diamonds in the run's colour) at their checkpoint's
 * step, one series per eval metric; each point has a small button over it whose hover or focus shows the eval's
 * profile, time and values, and whose click opens the run's eval table. Every remote string goes in as text.
 */
import { Chart, type ChartDataset, type Plugin, type Scale } from './chartjs';
import type { ValueRow, XRange } from '../shared/metricsProtocol';
import { evalTooltip, formatDiff, formatValue, type EvalMark, type MetricsStore, type Point, type XMode } from './store';
import { durationTicks, formatDurationTick, formatTick, logTicks, niceTicks, stepOf } from './ticks';
import { runColor, withAlpha, type Theme } from './theme';
import { plateauDirection, type PlateauDirection } from '../shared/metricDirection';
import { directionSwitch, nextDirection, plateauText } from './plateauText';
import { evalLines } from './evalSeries';
import { padRange, type Extent } from './panelRange';
import { placeTip } from './tipPlacement';
import { BAND_ALPHA, bandPlugin, type Band } from './chartBand';
import { ChartControls } from './chartControls';
import { el } from './dom';
import { keepXWhenYFixed } from './fixedY';
import { chartPngBase64, type ChartPicture } from './chartExport';
import type { ChartYRange, SeriesRef } from './viewState';
import { displayName } from '../shared/display';

export interface UiState {
  /** The user's smoothing weight and zoom range (the webview's own settings, viewState.ts). */
  smoothing: number;
  range: XRange | null;
  xMode: XMode;
  logY: boolean;
  hiddenRuns: Set<string>;
  /** The user's plateau direction per metric, where it differs from the name's (viewState.ts). */
  directions: Readonly<Record<string, PlateauDirection>>;
  /** The x range every chart of the panel shows when not zoomed (panelRange.ts); undefined: each its own data. */
  xExtent: Extent | undefined;
  mode: 'panel' | 'inline';
  /** Charts whose y axis the user fixed, and series hidden on one chart only (viewState.ts). */
  yRanges: ChartYRange[];
  hiddenSeries: SeriesRef[];
  /** Cursor position on the x axis (axis units), shared by every chart; null when not hovering. */
  hoverX: number | null;
  /** Exact values at the cursor (or at the highlighted checkpoint), from the extension. */
  rows: ValueRow[];
}

export interface ChartHost {
  store: MetricsStore;
  ui: UiState;
  theme(): Theme;
  hover(key: string, axisX: number | null): void;
  zoom(key: string, axisX0: number, axisX1: number): void;
  selectCheckpoint(step: number): void;
  /** Open the table of the primary run's evals. */
  showEvalTable(): void;
  /** The user flipped which way is better for a metric. */
  setDirection(key: string, direction: PlateauDirection): void;
  setYRange(key: string, range: { yMin: number; yMax: number } | null): void;
  showSeries(key: string, runKey: string, shown: boolean): void;
  /** Save the chart's series (these runs', in legend order) as CSV, or its picture as PNG: the extension asks where. */
  exportCsv(key: string, runKeys: string[]): void;
  exportPng(key: string, pngBase64: string): void;
}

/** Width of every chart's y axis (its tick labels), in CSS pixels: `0.2548`, `1.5e-4`, `12.5k` fit at 10 px. */
const Y_AXIS_WIDTH = 46;

/** Plot width per x tick: room for a label such as `12.5k` or `1h 20m` at 10 px and a gap. */
const X_TICK_SPACING = 48;

/** Room added above and below a linear y axis' data, as a fraction of its span. */
const Y_PADDING = 0.06;

/** Radius of an eval's point, in CSS pixels. */
const EVAL_POINT_RADIUS = 5;

export class MetricChart {
  readonly el: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly valueEl: HTMLElement;
  private readonly hintEl: HTMLElement;
  private readonly directionEl: HTMLButtonElement;
  /** The axes' tick labels as text (the canvas shows them only as pixels): for screen readers and tests. */
  private readonly tickLists: Record<'x' | 'y', HTMLElement>;
  private readonly readoutEl: HTMLElement;
  private readonly markers: HTMLElement;
  private readonly evalButtons: HTMLElement;
  private readonly tip: HTMLElement;
  private readonly selection: HTMLElement;
  /** The eval points drawn, per run (what the point buttons are placed over). */
  private evalMarks: { runLabel: string; marks: EvalMark[] }[] = [];
  private chart: Chart<'line', Point[]>;
  private dragFrom: number | null = null;
  /** The min/max bands under the decimated curves (chartBand.ts), rebuilt with the datasets. */
  private bands: Band[] = [];
  private readonly controls: ChartControls;

  constructor(
    parent: HTMLElement,
    readonly key: string,
    private readonly host: ChartHost,
  ) {
    this.el = el('section', 'metric');
    this.el.dataset.metric = key;
    const head = el('header', 'metric-head');
    const title = el('h2', 'metric-title');
    // A metric key is remote text: shown escaped (display.ts), kept exact as the chart's identity (data-metric).
    title.textContent = displayName(key);
    // Its whole name on hover where a narrow chart cuts it (metrics.css: the title gives way last).
    title.title = title.textContent;
    this.valueEl = el('span', 'metric-latest');
    // Which way is better for this metric (what the plateau hint judges by); a click flips it, then turns it off.
    this.directionEl = el('button', 'metric-direction');
    this.directionEl.type = 'button';
    this.directionEl.addEventListener('click', () => this.host.setDirection(key, nextDirection(plateauDirection(key, this.host.ui.directions), plateauDirection(key, {}))));
    this.controls = new ChartControls(key, {
      series: () => this.seriesItems(),
      fixedY: () => this.host.ui.yRanges.find((r) => r.metric === key),
      shownY: () => (this.chart.scales.y ? { min: this.chart.scales.y.min, max: this.chart.scales.y.max } : undefined),
      yNote: () => {
        const r = host.ui.yRanges.find((x) => x.metric === key);
        return r && host.ui.logY && !(r.yMin > 0) ? 'Log y: this range starts at or below 0, so the axis follows the data.' : '';
      },
      setYRange: (range) => host.setYRange(key, range),
      showSeries: (runKey, shown) => host.showSeries(key, runKey, shown),
      exportPng: () => host.exportPng(key, chartPngBase64(this.chart, this.picture())),
      // Every run with this series, hidden ones too (on this chart or in the panel): the CSV holds every point.
      exportCsv: () => host.exportCsv(key, host.store.runs.filter((r) => r.series.has(key)).map((r) => r.runKey)),
    });
    // One line, always there (empty when the metric is not flat): a hint coming or going never moves the chart. In
    // the short inline view it shares the title's line instead, so it never takes height from the chart.
    this.hintEl = el('div', 'metric-hint');
    const inline = host.ui.mode === 'inline';
    head.append(title, this.controls.legend, ...(inline ? [this.hintEl] : []), this.valueEl, this.directionEl, this.controls.menu);
    const body = el('div', 'metric-body');
    this.canvas = document.createElement('canvas');
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute('aria-label', `Chart of ${key}`);
    this.markers = el('div', 'markers');
    this.evalButtons = el('div', 'eval-points');
    this.tip = el('div', 'eval-tip');
    this.tip.setAttribute('role', 'tooltip');
    this.tip.hidden = true;
    this.selection = el('div', 'zoom-selection');
    body.append(this.canvas, this.markers, this.evalButtons, this.tip, this.selection);
    this.readoutEl = el('div', 'metric-readout');
    this.tickLists = { x: tickList(`x axis of ${key}`, 'x'), y: tickList(`y axis of ${key}`, 'y') };
    this.el.append(head, ...(inline ? [] : [this.hintEl]), body, this.readoutEl, this.tickLists.x, this.tickLists.y);
    parent.append(this.el);
    this.chart = new Chart<'line', Point[]>(this.canvas, {
      type: 'line',
      data: { datasets: [] },
      options: {
        animation: false,
        parsing: false,
        normalized: true,
        responsive: true,
        maintainAspectRatio: false,
        spanGaps: false,
        events: [],
        elements: { point: { radius: 0, hoverRadius: 0 }, line: { borderWidth: 1.5, tension: 0 } },
        plugins: {},
        scales: {},
      },
      plugins: [bandPlugin(() => this.bands), keepXWhenYFixed(), this.overlay()],
    });
    this.listen();
    this.render();
  }

  /** The plot area's width in CSS pixels (what decimation is computed for). */
  get plotWidth(): number {
    return Math.round(this.chart.chartArea?.width ?? this.canvas.clientWidth);
  }

  /** Rebuild datasets and axes from the store and UI state, and draw. */
  render(): void {
    const { store, ui } = this.host;
    const theme = this.host.theme();
    const datasets: ChartDataset<'line', Point[]>[] = [];
    const smoothing = ui.smoothing > 0;
    this.bands = [];
    for (const run of this.shownRuns()) {
      if (!run.series.has(this.key)) continue;
      const color = runColor(theme, run.color);
      const dash = run.role === 'reference' ? [6, 3] : [];
      const band = store.band(run, this.key, ui.xMode, ui.logY);
      if (band.length) this.bands.push({ color: withAlpha(color, BAND_ALPHA), points: band });
      if (smoothing) {
        datasets.push({ data: store.points(run, this.key, 'raw', ui.xMode, ui.logY), borderColor: withAlpha(color, 0.22), borderWidth: 1, borderDash: dash, pointRadius: 0 });
      }
      datasets.push({ data: store.points(run, this.key, smoothing ? 'smooth' : 'raw', ui.xMode, ui.logY), borderColor: color, borderWidth: 1.5, borderDash: dash, pointRadius: 0 });
    }
    // Evals: points only, over the curves, in the run's colour with an outline that shows on any background.
    this.evalMarks = [];
    for (const run of this.shownRuns()) {
      const marks = store.evalMarks(run, this.key, ui.xMode, ui.logY);
      if (marks.length === 0) continue;
      this.evalMarks.push({ runLabel: run.label, marks });
      const color = runColor(theme, run.color);
      // A line through the results of each profile (newest per step), dashed so it is not taken for a curve.
      for (const { points } of evalLines(marks)) {
        datasets.push({ data: points, borderColor: color, borderWidth: 1.5, borderDash: [4, 3], pointRadius: 0, clip: EVAL_POINT_RADIUS + 2 });
      }
      datasets.push({
        data: marks.map(({ x, y }) => ({ x, y })),
        showLine: false,
        pointStyle: 'rectRot',
        pointRadius: EVAL_POINT_RADIUS,
        pointBackgroundColor: color,
        pointBorderColor: theme.foreground,
        pointBorderWidth: 1,
        borderColor: color,
        // A point on the plot's edge (the first or last checkpoint) is drawn whole, not cut in half.
        clip: EVAL_POINT_RADIUS + 2,
      });
    }
    this.chart.data.datasets = datasets;
    const tickFont = { family: theme.font, size: 10 };
    type TickList = { value: number }[];
    const xTicks =
      ui.xMode === 'wall'
        ? (v: number | string) => new Date(Number(v)).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
        : ui.xMode === 'relative'
          ? (v: number | string) => formatDurationTick(Number(v))
          : (v: number | string, _i: number, ticks: TickList) => formatTick(Number(v), stepOf(ticks));
    // Our own tick values (ticks.ts): 1-2-5 steps inside any range, a zoomed one included (chart.js gave only its
    // two ends there), clock steps for time.
    // As many x ticks as fit their labels side by side: one per X_TICK_SPACING px of plot, 2 to 6 (a 160 px inline
    // chart gets `20k 40k`, not `10k20k30k40k`).
    const xBuild = (axis: { min: number; max: number; ticks: TickList; maxWidth: number }) => {
      const count = Math.max(2, Math.min(6, Math.floor((axis.maxWidth - Y_AXIS_WIDTH) / X_TICK_SPACING)));
      axis.ticks = (ui.xMode === 'step' ? niceTicks(axis.min, axis.max, count) : durationTicks(axis.min, axis.max, count)).map((value) => ({ value }));
    };
    const yBuild = (axis: { min: number; max: number; ticks: TickList }) => {
      axis.ticks = (ui.logY ? logTicks(axis.min, axis.max, 6) : niceTicks(axis.min, axis.max, 5)).map((value) => ({ value }));
    };
    const range = ui.range;
    const primary = store.primary;
    // Zoomed: the zoom's range; else the panel's one range, the same on every chart (panelRange.ts).
    const whole = ui.xExtent && ui.xExtent.max > ui.xExtent.min ? ui.xExtent : undefined;
    const xMin = range && ui.xMode === 'step' ? range.xMin : range ? store.xOfStep(primary, this.key, range.xMin, ui.xMode) : whole?.min;
    const xMax = range && ui.xMode === 'step' ? range.xMax : range ? store.xOfStep(primary, this.key, range.xMax, ui.xMode) : whole?.max;
    this.chart.options.scales = {
      x: { type: 'linear', min: xMin, max: xMax, afterBuildTicks: xBuild, ticks: { color: theme.muted, font: tickFont, maxTicksLimit: 8, maxRotation: 0, autoSkipPadding: 8, callback: xTicks }, grid: { color: withAlpha(theme.grid, 0.4) }, border: { color: theme.grid } },
      y: {
        type: ui.logY ? 'logarithmic' : 'linear',
        ...this.fixedYBounds(),
        afterBuildTicks: yBuild,
        // The same width on every chart, so their plot areas (and the checkpoint markers in them) line up in the grid;
        // wider only where the labels chart.js measured need it (never cut, as `000e-5` was).
        afterFit: (axis: { width: number }) => {
          axis.width = Math.max(Y_AXIS_WIDTH, Math.ceil(axis.width));
        },
        ticks: { color: theme.muted, font: tickFont, maxTicksLimit: 7, callback: (v: number | string, _i: number, ticks: TickList) => (ui.logY ? formatTick(Number(v), Number(v)) : formatTick(Number(v), stepOf(ticks))) },
        grid: { color: withAlpha(theme.grid, 0.4) },
        border: { color: theme.grid },
      },
    };
    this.chart.update('none');
    this.controls.render();
    // The y axis as drawn, on the element (for tests and anyone inspecting the webview), as afterRender does for x.
    this.el.dataset.yRange = this.fixedYBounds().min !== undefined ? 'fixed' : 'auto';
    const yScale = this.chart.scales.y;
    if (yScale) (this.el.dataset.yMin = String(yScale.min)), (this.el.dataset.yMax = String(yScale.max));
    this.renderText();
  }

  /** What a saved PNG shows above the chart: the metric, the panel's title, the runs drawn in their colours. */
  private picture(): ChartPicture {
    const theme = this.host.theme();
    const legend = this.shownRuns()
      .filter((r) => r.series.has(this.key) || r.evals.some((e) => e.values[this.key] !== undefined))
      .map((r) => ({ label: r.label, color: runColor(theme, r.color), dashed: r.role === 'reference' }));
    return { title: this.key, subtitle: this.host.store.title, legend, theme };
  }

  /** The runs whose series this chart draws: not hidden in the panel's legend, nor on this chart. */
  private shownRuns() {
    const { store, ui } = this.host;
    return store.runs.filter((r) => !ui.hiddenRuns.has(r.runKey) && !ui.hiddenSeries.some((h) => h.metric === this.key && h.runKey === r.runKey));
  }

  /** The legend of this chart: every run (not hidden panel-wide) with a curve or an eval on it. */
  private seriesItems() {
    const { store, ui } = this.host;
    const theme = this.host.theme();
    return store.runs
      .filter((r) => !ui.hiddenRuns.has(r.runKey) && (r.series.has(this.key) || r.evals.some((e) => e.values[this.key] !== undefined)))
      .map((r) => ({
        runKey: r.runKey,
        label: r.label,
        where: r.where,
        color: runColor(theme, r.color),
        hidden: ui.hiddenSeries.some((h) => h.metric === this.key && h.runKey === r.runKey),
      }));
  }

  /** The user's fixed y range (on a log axis only a positive one). */
  private fixedYBounds(): { min?: number; max?: number } {
    const { ui } = this.host;
    const r = ui.yRanges.find((x) => x.metric === this.key);
    if (!r || (ui.logY && !(r.yMin > 0))) return {};
    return { min: r.yMin, max: r.yMax };
  }

  /** Header, plateau hint and readout (text only; no redraw of the canvas). */
  renderText(): void {
    const { store, ui } = this.host;
    const primary = store.primary;
    const latest = primary?.latest[this.key];
    this.valueEl.textContent = latest !== undefined ? formatValue(latest) : '';
    this.valueEl.title = this.valueEl.textContent;
    const plateau = primary?.plateaus.find((p) => p.key === this.key);
    const text = plateau ? plateauText(plateau, ui.mode) : undefined;
    this.hintEl.textContent = text?.short ?? '';
    this.hintEl.title = text?.full ?? '';
    if (text) this.hintEl.setAttribute('aria-label', text.full);
    else this.hintEl.removeAttribute('aria-label');
    this.hintEl.classList.toggle('on', plateau !== undefined);
    const sw = directionSwitch(this.key, plateauDirection(this.key, ui.directions), plateauDirection(this.key, {}));
    if (this.directionEl.textContent !== sw.symbol) this.directionEl.textContent = sw.symbol;
    if (this.directionEl.title !== sw.label) {
      this.directionEl.title = sw.label;
      this.directionEl.setAttribute('aria-label', sw.label);
    }
    // A line per run that has this metric, reserved whether or not the cursor is on a chart: hovering never moves it.
    const lines = store.runs.filter((r) => !ui.hiddenRuns.has(r.runKey) && r.series.has(this.key)).length;
    this.readoutEl.style.setProperty('--readout-lines', String(Math.max(1, lines)));
    this.renderReadout(ui.rows.filter((r) => r.metric === this.key));
  }

  private renderReadout(rows: ValueRow[]): void {
    const { store } = this.host;
    const theme = this.host.theme();
    this.readoutEl.replaceChildren();
    if (rows.length === 0) return;
    const refs = store.references.filter((r) => r.metric === this.key);
    for (const row of rows) {
      const run = this.shownRuns().find((r) => r.runKey === row.runKey);
      if (!run) continue;
      const line = el('div', 'readout-row');
      const swatch = el('span', 'swatch');
      swatch.style.backgroundColor = runColor(theme, run.color);
      const text = el('span', 'readout-text');
      const parts = [`${run.label} @ ${formatValue(row.step)}: ${formatValue(row.value)}`];
      if (this.host.ui.smoothing > 0) parts.push(`(smoothed ${formatValue(row.smoothed)})`);
      if (row.referenceValue !== undefined) parts.push(`Δ ref run ${formatDiff(row.value - row.referenceValue)}`);
      for (const ref of refs) parts.push(`Δ ${ref.label} ${formatDiff(row.value - ref.value)}`);
      text.textContent = parts.join(' ');
      // One line each (the reserved height): what does not fit is cut with an ellipsis and shown on hover.
      line.title = text.textContent;
      line.append(swatch, text);
      this.readoutEl.append(line);
    }
  }

  /** Redraw the canvas (overlays: cursor, highlight) and the marker buttons, without rebuilding datasets. */
  requestDraw(): void {
    // render(), not draw(): only render() ends in afterRender, where the marker buttons are placed.
    this.chart.render();
  }

  destroy(): void {
    this.tip.remove();
    this.chart.destroy();
    this.el.remove();
  }

  private listen(): void {
    const axisX = (e: MouseEvent): number | undefined => {
      const area = this.chart.chartArea;
      const px = e.offsetX;
      if (!area || px < area.left || px > area.right) return undefined;
      return this.chart.scales.x?.getValueForPixel(px);
    };
    this.canvas.addEventListener('mousemove', (e) => {
      const x = axisX(e);
      this.host.hover(this.key, x ?? null);
      if (this.dragFrom !== null) {
        const left = Math.min(this.dragFrom, e.offsetX);
        this.selection.hidden = false;
        this.selection.style.left = `${left}px`;
        this.selection.style.width = `${Math.abs(e.offsetX - this.dragFrom)}px`;
      }
    });
    this.canvas.addEventListener('mouseleave', () => {
      this.host.hover(this.key, null);
      this.dragFrom = null;
      this.selection.hidden = true;
    });
    this.canvas.addEventListener('mousedown', (e) => {
      if (axisX(e) !== undefined) this.dragFrom = e.offsetX;
    });
    // A drag across a checkpoint marker (a button over the canvas) would leave the canvas and cancel the zoom:
    // the canvas keeps the pointer until the button is released.
    this.canvas.addEventListener('pointerdown', (e) => {
      if (e.button === 0 && axisX(e) !== undefined) this.canvas.setPointerCapture(e.pointerId);
    });
    this.canvas.addEventListener('mouseup', (e) => {
      const from = this.dragFrom;
      this.dragFrom = null;
      this.selection.hidden = true;
      if (from === null || Math.abs(e.offsetX - from) < 6) return;
      const scale = this.chart.scales.x;
      const a = scale?.getValueForPixel(Math.min(from, e.offsetX));
      const b = scale?.getValueForPixel(Math.max(from, e.offsetX));
      if (a !== undefined && b !== undefined && b > a) this.host.zoom(this.key, a, b);
    });
    this.selection.hidden = true;
  }

  /** Reference lines, checkpoint markers, the cursor and the plateau start, drawn over the curves. */
  private overlay(): Plugin<'line'> {
    return {
      id: 'remoteRunsOverlay',
      afterDataLimits: (chart, args: { scale: Scale }) => {
        // Reference lines stay on the chart even when the curve is far from them (unless the user fixed its range).
        if (args.scale.id !== 'y' || this.fixedYBounds().min !== undefined) return;
        for (const ref of this.host.store.references) {
          if (ref.metric !== this.key || (this.host.ui.logY && ref.value <= 0)) continue;
          if (ref.value < args.scale.min) args.scale.min = ref.value;
          if (ref.value > args.scale.max) args.scale.max = ref.value;
        }
        // Room above and below the data, so a point at the top or bottom value is not cut by the plot's edge; never
        // across zero (a learning rate gets no negative ticks).
        if (!this.host.ui.logY) Object.assign(args.scale, padRange(args.scale.min, args.scale.max, Y_PADDING));
      },
      afterDatasetsDraw: (chart) => {
        const { ctx, chartArea: area, scales } = chart;
        const x = scales.x;
        const y = scales.y;
        if (!area || !x || !y) return;
        const theme = this.host.theme();
        const { store, ui } = this.host;
        ctx.save();
        ctx.beginPath();
        ctx.rect(area.left, area.top, area.width, area.height);
        ctx.clip();
        // Checkpoint markers: faint, the highlighted one in the focus colour.
        const primary = store.primary;
        for (const c of primary?.checkpoints ?? []) {
          const ax = store.xOfStep(primary, this.key, c.step, ui.xMode);
          if (ax === undefined) continue;
          const px = x.getPixelForValue(ax);
          if (px < area.left || px > area.right) continue;
          const on = store.highlight === c.step;
          ctx.strokeStyle = on ? theme.highlight : withAlpha(theme.muted, 0.35);
          ctx.lineWidth = on ? 2 : 1;
          ctx.setLineDash(on ? [] : [2, 3]);
          line(ctx, px, area.top, px, area.bottom);
        }
        // Plateau: where the flat stretch began.
        const plateau = primary?.plateaus.find((p) => p.key === this.key);
        if (plateau) {
          const ax = store.xOfStep(primary, this.key, plateau.flatSince, ui.xMode);
          if (ax !== undefined) {
            ctx.strokeStyle = withAlpha(theme.palette[5], 0.7);
            ctx.lineWidth = 1;
            ctx.setLineDash([1, 2]);
            const px = x.getPixelForValue(ax);
            line(ctx, px, area.top, px, area.bottom);
          }
        }
        // Reference lines with their labels (canvas text: never parsed as markup).
        ctx.font = `10px ${theme.font}`;
        for (const ref of store.references) {
          if (ref.metric !== this.key || (ui.logY && ref.value <= 0)) continue;
          const py = y.getPixelForValue(ref.value);
          ctx.strokeStyle = theme.foreground;
          ctx.lineWidth = 1;
          ctx.setLineDash([5, 4]);
          line(ctx, area.left, py, area.right, py);
          ctx.fillStyle = theme.foreground;
          ctx.fillText(`${ref.label} ${formatValue(ref.value)}`, area.left + 4, py - 3);
        }
        // The shared cursor.
        if (ui.hoverX !== null) {
          const px = x.getPixelForValue(ui.hoverX);
          ctx.strokeStyle = withAlpha(theme.foreground, 0.5);
          ctx.lineWidth = 1;
          ctx.setLineDash([]);
          line(ctx, px, area.top, px, area.bottom);
        }
        ctx.restore();
      },
      // The hook's chart: during construction `this.chart` is not assigned yet.
      afterRender: (chart) => {
        this.placeMarkers(chart.chartArea, chart.scales.x);
        this.placeEvalButtons(chart.chartArea, chart.scales.x, chart.scales.y);
        // What the axes show, on the element, for tests and anyone inspecting the webview (the canvas hides it).
        const { x, y } = chart.scales;
        if (x && y) {
          this.el.dataset.xMin = String(x.min);
          this.el.dataset.xMax = String(x.max);
          this.el.dataset.yScale = y.type;
          this.el.dataset.yAxisWidth = String(Math.round(y.width));
          const font = `10px ${this.host.theme().font}`;
          writeTicks(this.tickLists.x, x, chart.ctx, font);
          writeTicks(this.tickLists.y, y, chart.ctx, font);
        }
      },
    };
  }

  /** Thin buttons over the checkpoint markers: what a click (or Enter) on a marker lands on. */
  private placeMarkers(area: { left: number; right: number; top: number; height: number } | undefined, x: Scale | undefined): void {
    const { store, ui } = this.host;
    const primary = store.primary;
    const wanted: { step: number; name: string; px: number }[] = [];
    if (area && x) {
      for (const c of primary?.checkpoints ?? []) {
        const ax = store.xOfStep(primary, this.key, c.step, ui.xMode);
        if (ax === undefined) continue;
        const px = x.getPixelForValue(ax);
        if (px >= area.left && px <= area.right) wanted.push({ step: c.step, name: c.name, px });
      }
    }
    const existing = Array.from(this.markers.children) as HTMLButtonElement[];
    while (existing.length > wanted.length) existing.pop()!.remove();
    wanted.forEach((w, i) => {
      let b = existing[i];
      if (!b) {
        b = document.createElement('button');
        b.className = 'ckpt-marker';
        b.addEventListener('click', () => this.host.selectCheckpoint(Number(b.dataset.step)));
        this.markers.append(b);
      }
      b.dataset.step = String(w.step);
      const label = `Checkpoint ${displayName(w.name)} (step ${w.step})`;
      if (b.getAttribute('aria-label') !== label) {
        b.setAttribute('aria-label', label);
        b.title = label;
      }
      b.style.left = `${Math.round(w.px) - 3}px`;
      b.style.top = `${Math.round(area?.top ?? 0)}px`;
      b.style.height = `${Math.round(area?.height ?? 0)}px`;
      b.classList.toggle('highlighted', store.highlight === w.step);
    });
  }

  /**
   * Small buttons over the eval points: hovering or focusing one shows its tooltip (profile, time, values); a click
   * opens the eval table. Also what lets a keyboard or a screen reader reach the points.
   */
  private placeEvalButtons(area: { left: number; right: number; top: number; bottom: number } | undefined, x: Scale | undefined, y: Scale | undefined): void {
    const wanted: EvalButtonSpec[] = [];
    if (area && x && y) {
      for (const { runLabel, marks } of this.evalMarks) {
        for (const m of marks) {
          const px = x.getPixelForValue(m.x);
          const py = y.getPixelForValue(m.y);
          if (px < area.left - 1 || px > area.right + 1 || py < area.top - 1 || py > area.bottom + 1) continue;
          const values = Object.entries(m.eval.values)
            .map(([k, v]) => `${k} ${formatValue(v)}`)
            .join(', ');
          wanted.push({ px, py, label: `Eval ${m.eval.profile} of ${m.eval.checkpoint} (step ${m.eval.step}): ${values}`, tip: evalTooltip(m.eval, runLabel) });
        }
      }
    }
    const existing = Array.from(this.evalButtons.children) as HTMLButtonElement[];
    while (existing.length > wanted.length) existing.pop()!.remove();
    wanted.forEach((w, i) => {
      let b = existing[i];
      if (!b) {
        b = document.createElement('button');
        b.type = 'button';
        b.className = 'eval-point';
        const show = (): void => this.showTip(b!);
        b.addEventListener('mouseenter', show);
        b.addEventListener('focus', show);
        b.addEventListener('mouseleave', () => this.hideTip());
        b.addEventListener('blur', () => this.hideTip());
        b.addEventListener('click', () => this.host.showEvalTable());
        this.evalButtons.append(b);
      }
      if (b.getAttribute('aria-label') !== w.label) b.setAttribute('aria-label', w.label);
      b.dataset.tip = w.tip;
      const size = 2 * EVAL_POINT_RADIUS + 4;
      b.style.left = `${Math.round(w.px - size / 2)}px`;
      b.style.top = `${Math.round(w.py - size / 2)}px`;
      b.style.width = b.style.height = `${size}px`;
      if (this.tip.dataset.for === String(i) && !this.tip.hidden) this.showTip(b);
    });
  }

  private showTip(b: HTMLButtonElement): void {
    this.tip.textContent = b.dataset.tip ?? '';
    this.tip.dataset.for = String(Array.prototype.indexOf.call(this.evalButtons.children, b));
    this.tip.hidden = false;
    // Beside the point and whole inside the window (a point at the right edge gets its tooltip on its left).
    const anchor = b.getBoundingClientRect();
    const at = placeTip(anchor, { width: this.tip.offsetWidth, height: this.tip.offsetHeight }, { width: document.documentElement.clientWidth, height: window.innerHeight });
    this.tip.style.left = `${at.left}px`;
    this.tip.style.top = `${at.top}px`;
  }

  private hideTip(): void {
    this.tip.hidden = true;
    delete this.tip.dataset.for;
  }
}

/** An eval point's button: where it sits and which eval it is. */
interface EvalButtonSpec {
  px: number;
  py: number;
  label: string;
  tip: string;
}

/** An off-screen list of an axis' tick labels, as chart.js formatted them. */
function tickList(label: string, axis: 'x' | 'y'): HTMLElement {
  const list = el('ul', 'axis-ticks');
  list.dataset.axis = axis;
  list.setAttribute('aria-label', label);
  return list;
}

/**
 * The tick labels chart.js drew, each with where (`data-px`, CSS px from the canvas' left or top) and how wide
 * (`data-width`, its text in the tick font): what tests check for labels that overlap or are cut.
 */
function writeTicks(list: HTMLElement, scale: Scale, ctx: CanvasRenderingContext2D, font: string): void {
  const labels = scale.ticks.map((t) => (Array.isArray(t.label) ? t.label.join(' ') : String(t.label ?? '')));
  const px = scale.ticks.map((_t, i) => Math.round(scale.getPixelForTick(i)));
  const text = `${labels.join('\n')}|${px.join(',')}`;
  if (list.dataset.text === text) return;
  list.dataset.text = text;
  ctx.save();
  ctx.font = font;
  list.replaceChildren(
    ...labels.map((l, i) => {
      const li = document.createElement('li');
      li.textContent = l;
      li.dataset.px = String(px[i]);
      li.dataset.width = String(Math.ceil(ctx.measureText(l).width));
      return li;
    }),
  );
  ctx.restore();
}

function line(ctx: CanvasRenderingContext2D, x0: number, y0: number, x1: number, y1: number): void {
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  ctx.lineTo(x1, y1);
  ctx.stroke();
}
