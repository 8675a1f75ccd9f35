/// <reference lib="dom" />
/**
 * What one chart's header offers besides its title: a legend of the series on that chart (a click hides or shows
 * that run's curve on this chart only), and a menu (a button, reachable by keyboard) to save the chart as a PNG or
 * its series as CSV and to fix its y axis or let it follow the data. The choices belong to the reducer
 * (viewState.ts); this only draws them and reports clicks. Remote strings (run names) are set as text only.
 */
import type { ChartYRange } from './viewState';
import { el, popup } from './dom';

/** One run's series on this chart, as its legend shows it. */
export interface ChartSeriesItem {
  runKey: string;
  label: string;
  /** Where the run lives (its tooltip). */
  where: string;
  color: string;
  hidden: boolean;
}

export interface ChartControlsHost {
  /** The series this chart can draw (hidden ones too), in legend order. */
  series(): ChartSeriesItem[];
  /** The y range the user fixed on this chart, if any. */
  fixedY(): ChartYRange | undefined;
  /** The y range the chart shows now (what "fix" starts from). */
  shownY(): { min: number; max: number } | undefined;
  /** Why the fixed range is not applied now, if it is not (a log axis needs a minimum above 0). */
  yNote(): string;
  setYRange(range: { yMin: number; yMax: number } | null): void;
  showSeries(runKey: string, shown: boolean): void;
  exportPng(): void;
  exportCsv(): void;
}

/** Numbers as the y range inputs show them: short, and parsed back to the same value. */
const inputValue = (v: number): string => String(Number(v.toPrecision(6)));

export class ChartControls {
  /** The per-chart legend (in the header, beside the title). */
  readonly legend: HTMLElement;
  /** The menu button and its popup. */
  readonly menu: HTMLDetailsElement;
  private readonly yAuto: HTMLInputElement;
  private readonly yFixed: HTMLInputElement;
  private readonly yMin: HTMLInputElement;
  private readonly yMax: HTMLInputElement;
  private readonly yError: HTMLElement;
  private legendSignature = '';

  constructor(
    private readonly metric: string,
    private readonly host: ChartControlsHost,
  ) {
    this.legend = el('div', 'chart-legend');
    this.legend.setAttribute('role', 'group');
    this.legend.setAttribute('aria-label', `Series on the ${metric} chart`);

    // Closed by Apply, a save, a press outside it and Escape (dom.ts closeOpenPopups).
    this.menu = popup('chart-menu');
    const summary = el('summary', 'chart-menu-button');
    summary.textContent = '⋯';
    summary.title = `Chart options: save as PNG or CSV, y range`;
    summary.setAttribute('aria-label', `Chart options for ${metric}`);
    const pop = el('div', 'chart-menu-popup');
    pop.setAttribute('role', 'group');
    const png = button('Save as PNG…', () => this.close(() => host.exportPng()), `Save this chart as a PNG image`);
    png.dataset.action = 'export-png';
    const csv = button('Save as CSV…', () => this.close(() => host.exportCsv()), `Save every point of this metric's series (full resolution) as CSV: every run that has it, hidden ones too`);
    csv.dataset.action = 'export-csv';

    const yGroup = el('fieldset', 'chart-yrange');
    const legendEl = el('legend', '');
    legendEl.textContent = 'Y range';
    const name = `y-${Math.random().toString(36).slice(2)}`;
    this.yAuto = radio(name, 'auto');
    this.yFixed = radio(name, 'fixed');
    this.yMin = numberInput(`Y minimum of ${metric}`);
    this.yMax = numberInput(`Y maximum of ${metric}`);
    this.yError = el('div', 'chart-yrange-error');
    this.yError.setAttribute('role', 'alert');
    const apply = button('Apply', () => this.applyFixed(), 'Fix the y axis of this chart to this range');
    apply.dataset.action = 'apply-y';
    const autoLabel = labelled(this.yAuto, 'Auto (follow the data)');
    const fixedLabel = labelled(this.yFixed, 'Fixed');
    const fields = el('div', 'chart-yrange-fields');
    const dash = el('span', '');
    dash.textContent = '–';
    fields.append(this.yMin, dash, this.yMax, apply);
    yGroup.append(legendEl, autoLabel, fixedLabel, fields, this.yError);
    this.yAuto.addEventListener('change', () => {
      if (this.yAuto.checked) host.setYRange(null);
      this.render();
      this.menu.open = false;
    });
    this.yFixed.addEventListener('change', () => {
      // Applies the range shown and keeps the menu open to edit it.
      if (this.yFixed.checked) this.applyFixed(false);
    });
    for (const input of [this.yMin, this.yMax]) {
      input.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') {
          e.preventDefault();
          this.applyFixed();
        }
      });
    }
    pop.append(png, csv, yGroup);
    this.menu.append(summary, pop);
    this.menu.addEventListener('toggle', () => {
      if (this.menu.open) this.fillInputs();
    });
    this.render();
  }

  /** Show the current choices: legend entries, y range mode. Cheap when nothing changed. */
  render(): void {
    const items = this.host.series();
    const fixed = this.host.fixedY();
    this.yAuto.checked = !fixed;
    this.yFixed.checked = !!fixed;
    this.menu.dataset.yRange = fixed ? 'fixed' : 'auto';
    const note = this.host.yNote();
    if (note || this.yError.dataset.note) {
      this.yError.textContent = note;
      this.yError.dataset.note = note ? 'true' : '';
    }
    // A legend with one series shows only when it is hidden (so it can be shown again).
    const shown = items.length > 1 || items.some((i) => i.hidden);
    const signature = JSON.stringify(shown ? items : []);
    if (signature === this.legendSignature) return;
    this.legendSignature = signature;
    this.legend.replaceChildren();
    this.legend.hidden = !shown;
    if (!shown) return;
    for (const item of items) {
      const b = el('button', 'chart-legend-item');
      b.type = 'button';
      b.dataset.runKey = item.runKey;
      b.setAttribute('aria-pressed', String(!item.hidden));
      b.classList.toggle('off', item.hidden);
      b.title = `${item.where} — click to ${item.hidden ? 'show' : 'hide'} on this chart only`;
      const sw = el('span', 'swatch');
      sw.style.backgroundColor = item.color;
      const label = el('span', 'chart-legend-label');
      label.textContent = item.label;
      b.append(sw, label);
      b.addEventListener('click', () => this.host.showSeries(item.runKey, item.hidden));
      this.legend.append(b);
    }
  }

  private fillInputs(): void {
    const fixed = this.host.fixedY();
    const shown = fixed ? { min: fixed.yMin, max: fixed.yMax } : this.host.shownY();
    if (shown) {
      this.yMin.value = inputValue(shown.min);
      this.yMax.value = inputValue(shown.max);
    }
    this.yError.textContent = this.host.yNote();
  }

  /** Fix the y range to the inputs' values; `close`: and close the menu (Apply, Enter), when they were valid. */
  private applyFixed(close = true): void {
    const lo = this.yMin.value.trim() === '' ? NaN : Number(this.yMin.value);
    const hi = this.yMax.value.trim() === '' ? NaN : Number(this.yMax.value);
    if (!Number.isFinite(lo) || !Number.isFinite(hi) || !(hi > lo)) {
      this.yError.textContent = 'Give a minimum below the maximum.';
      this.render();
      return;
    }
    this.yError.textContent = '';
    this.yError.dataset.note = '';
    this.host.setYRange({ yMin: lo, yMax: hi });
    this.render();
    if (close) this.menu.open = false;
  }

  private close(then: () => void): void {
    this.menu.open = false;
    then();
  }
}

function button(text: string, onClick: () => void, title: string): HTMLButtonElement {
  const b = el('button', 'chart-menu-item');
  b.type = 'button';
  b.textContent = text;
  b.title = title;
  b.addEventListener('click', onClick);
  return b;
}

function radio(name: string, value: string): HTMLInputElement {
  const r = el('input', '');
  r.type = 'radio';
  r.name = name;
  r.value = value;
  return r;
}

function numberInput(label: string): HTMLInputElement {
  const i = el('input', '');
  i.type = 'number';
  i.step = 'any';
  i.setAttribute('aria-label', label);
  return i;
}

function labelled(control: HTMLInputElement, text: string): HTMLLabelElement {
  const l = el('label', 'chart-yrange-choice');
  const span = el('span', '');
  span.textContent = text;
  l.append(control, span);
  return l;
}
