/**
 * Messages from a webview are untrusted input (a webview runs remote strings through a DOM): every one is
 * checked here before the extension acts on it, and anything malformed is dropped. Also validates the state a
 * restored panel hands back after a reload. Pure: no `vscode`.
 */
import type { FromWebview, PanelRestoreState, RunRefWire, ViewWire, XRange } from '../../shared/metricsProtocol';
import type { PlateauDirection } from '../../shared/metricDirection';
import { put } from '../../shared/dict';

const MAX_TEXT = 500;
const MAX_WIDTH = 20_000;
const MAX_LIST = 1000;
/** A chart's PNG as base64: a 4K-wide canvas at device pixel ratio 2 is well under this. */
const MAX_PNG_BASE64 = 48 * 1024 * 1024;

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function finite(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

function text(v: unknown, max = MAX_TEXT): v is string {
  return typeof v === 'string' && v.length <= max;
}

function width(v: unknown): number | undefined {
  return finite(v) && v >= 1 && v <= MAX_WIDTH ? Math.floor(v) : undefined;
}

function range(v: unknown): XRange | null | undefined {
  if (v === null) return null;
  if (!isObj(v) || !finite(v.xMin) || !finite(v.xMax) || !(v.xMax > v.xMin)) return undefined;
  return { xMin: v.xMin, xMax: v.xMax };
}

/** The view a `ready` or `view` message reports, or undefined when any field is malformed. */
function viewOf(msg: Obj): ViewWire | undefined {
  const w = width(msg.width);
  const r = range(msg.range);
  if (w === undefined || r === undefined) return undefined;
  if (!finite(msg.smoothing) || msg.smoothing < 0 || msg.smoothing >= 1) return undefined;
  if (!Array.isArray(msg.hidden) || msg.hidden.length > MAX_LIST || !msg.hidden.every((h) => text(h))) return undefined;
  const d = directions(msg.directions);
  if (d === null) return undefined;
  return { width: w, range: r, smoothing: msg.smoothing, hidden: [...(msg.hidden as string[])], ...(d ? { directions: d } : {}) };
}

/** The plateau directions a view names (metric → lower, higher, off); undefined when absent, null when malformed. */
function directions(v: unknown): Record<string, PlateauDirection> | undefined | null {
  if (v === undefined) return undefined;
  if (!isObj(v)) return null;
  const entries = Object.entries(v);
  if (entries.length > MAX_LIST) return null;
  const out: Record<string, PlateauDirection> = {};
  for (const [k, d] of entries) {
    if (!text(k) || k.length === 0 || (d !== 'lower' && d !== 'higher' && d !== 'off')) return null;
    put(out, k, d); // a metric named `__proto__` is a key like any other
  }
  return entries.length ? out : undefined;
}

/**
 * The message as a typed value, or undefined when it is not one the extension understands (unknown type,
 * missing or mistyped fields, non-finite numbers, oversized strings). Extra fields are dropped.
 */
export function parseFromWebview(msg: unknown): FromWebview | undefined {
  if (!isObj(msg) || typeof msg.type !== 'string') return undefined;
  switch (msg.type) {
    case 'ready':
    case 'view': {
      const view = viewOf(msg);
      return view && { type: msg.type, ...view };
    }
    case 'hover':
      return Number.isSafeInteger(msg.seq) && finite(msg.x) ? { type: 'hover', seq: msg.seq as number, x: msg.x } : undefined;
    case 'selectCheckpoint':
      return finite(msg.step) ? { type: 'selectCheckpoint', step: msg.step } : undefined;
    case 'addRun':
      return { type: 'addRun' };
    case 'openPanel':
      return { type: 'openPanel' };
    case 'showEvalTable':
      return { type: 'showEvalTable' };
    case 'copyEvalTable':
      return msg.format === 'csv' || msg.format === 'markdown' ? { type: 'copyEvalTable', format: msg.format } : undefined;
    case 'compare':
      return msg.action === 'swap' || msg.action === 'changeB' || msg.action === 'retry' ? { type: 'compare', action: msg.action } : undefined;
    case 'removeRun':
      return text(msg.runKey) ? { type: 'removeRun', runKey: msg.runKey } : undefined;
    case 'setXColumn':
      return text(msg.runKey) && (msg.key === null || (text(msg.key) && msg.key.length > 0)) ? { type: 'setXColumn', runKey: msg.runKey, key: msg.key } : undefined;
    case 'setReferenceRun':
      return msg.runKey === null || text(msg.runKey) ? { type: 'setReferenceRun', runKey: msg.runKey } : undefined;
    case 'addReferenceLine': {
      const { metric, value, label, source } = msg;
      if (!text(metric) || metric.length === 0 || !finite(value) || !text(label) || !text(source)) return undefined;
      if (label.trim().length === 0) return undefined;
      return { type: 'addReferenceLine', metric, value, label: label.trim(), source: source.trim() };
    }
    case 'removeReferenceLine':
      return text(msg.id) && msg.id.length > 0 ? { type: 'removeReferenceLine', id: msg.id } : undefined;
    case 'exportCsv': {
      const { metric, runKeys } = msg;
      if (!text(metric) || metric.length === 0 || !Array.isArray(runKeys) || runKeys.length > MAX_LIST || !runKeys.every((k) => text(k))) return undefined;
      return { type: 'exportCsv', metric, runKeys: [...(runKeys as string[])] };
    }
    case 'exportPng': {
      const { metric, png } = msg;
      if (!text(metric) || metric.length === 0 || typeof png !== 'string' || png.length === 0 || png.length > MAX_PNG_BASE64) return undefined;
      return /^[A-Za-z0-9+/]+={0,2}$/.test(png) ? { type: 'exportPng', metric, png } : undefined;
    }
    default:
      return undefined;
  }
}

function runRef(v: unknown): RunRefWire | undefined {
  if (!isObj(v) || !text(v.hostName) || !v.hostName || !text(v.runPath, 4096) || !text(v.runName, 4096)) return undefined;
  const t = v.target;
  if (!isObj(t) || (t.kind !== 'host' && t.kind !== 'pct' && t.kind !== 'docker') || !text(t.id)) return undefined;
  if (!Array.isArray(v.metrics) || v.metrics.length > MAX_LIST || !v.metrics.every((m) => text(m, 4096))) return undefined;
  if (!Array.isArray(v.checkpoints) || v.checkpoints.length > 100_000) return undefined;
  const checkpoints = [];
  for (const c of v.checkpoints) {
    if (!isObj(c) || !finite(c.step) || !text(c.name, 4096) || !text(c.path, 4096)) return undefined;
    checkpoints.push({ step: c.step, name: c.name, path: c.path });
  }
  return {
    hostName: v.hostName,
    target: { kind: t.kind, id: t.id },
    runPath: v.runPath,
    runName: v.runName,
    metrics: [...(v.metrics as string[])],
    checkpoints,
  };
}

/** The restore state of a panel after a reload, or undefined when it is not one this version wrote. */
export function parseRestoreState(v: unknown): PanelRestoreState | undefined {
  if (!isObj(v)) return undefined;
  const inner = isObj(v.restore) ? v.restore : v;
  if (inner.version !== 1) return undefined;
  const primary = runRef(inner.primary);
  if (!primary || !Array.isArray(inner.others) || inner.others.length > 100) return undefined;
  const others: PanelRestoreState['others'] = [];
  for (const o of inner.others) {
    if (!isObj(o) || (o.role !== 'compare' && o.role !== 'reference')) return undefined;
    const run = runRef(o.run);
    if (!run) return undefined;
    others.push({ run, role: o.role });
  }
  return { version: 1, primary, others };
}
