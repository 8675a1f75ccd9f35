/**
 * What "Save as CSV…" and "Save as PNG…" of a metrics chart write, before anything asks where: the CSV of the chart's
 * series at full resolution (core/metrics/series/seriesCsv.ts) from the runs the presenter holds, the PNG the webview drew
 * (checked to be one), and the file name offered. Pure: no `vscode`.
 */
import { seriesCsv, type CsvColumn } from '../../core/metrics/series/seriesCsv';
import { xLabel } from '../../shared/xLabel';
import { whereOf } from '../../core/runRef';
import type { PresenterRun } from './presenter';

export interface ExportFile {
  /** File name offered in the save dialog (no folder). */
  name: string;
  kind: 'csv' | 'png';
  bytes: Uint8Array;
  /** What was saved, for the message afterwards (`loss of run-a, 3,000 rows`). */
  what: string;
}

/** A file name from remote text: letters, digits, `.`, `_`, `-` kept, anything else one `_`. */
export function safeFileName(s: string): string {
  const t = s.replace(/[^\w.-]+/g, '_').replace(/^\.+/, '_').slice(0, 120);
  return t || '_';
}

/**
 * The CSV of one metric's chart: the series of `runKeys` (in that order; keys no run has, and runs without that
 * metric, are left out). Undefined when no series remains (an eval-only chart: its values are in the eval table).
 */
export function chartCsv(runs: readonly PresenterRun[], metric: string, runKeys: readonly string[]): ExportFile | undefined {
  const picked: { run: PresenterRun; col: CsvColumn }[] = [];
  for (const key of runKeys) {
    const run = runs.find((r) => r.key === key);
    const series = run?.feed.series().get(metric);
    if (!run || !series || picked.some((p) => p.run === run)) continue;
    picked.push({ run, col: { run: run.ref.runName, series } });
  }
  if (picked.length === 0) return undefined;
  // Same-named runs (on two hosts) get where they are in their columns' names.
  const names = picked.map((p) => p.run.ref.runName);
  for (const p of picked) {
    if (names.filter((n) => n === p.run.ref.runName).length > 1) p.col = { ...p.col, run: `${p.run.ref.runName} (${whereOf(p.run.ref)})` };
  }
  const xs = [...new Set(picked.map((p) => xLabel(p.run.feed.xAxis)))];
  const text = seriesCsv(xs.length === 1 ? xs[0] : 'x', metric, picked.map((p) => p.col));
  const rows = text.split('\r\n').length - 2;
  const first = picked[0].run.ref.runName;
  return {
    name: `${safeFileName(first)}-${safeFileName(metric)}.csv`,
    kind: 'csv',
    bytes: new TextEncoder().encode(text),
    what: `${metric} of ${picked.map((p) => p.col.run).join(', ')}, ${rows.toLocaleString('en-US')} rows`,
  };
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** Width and height of a PNG (from its IHDR chunk), or undefined when the bytes are not a PNG. */
export function pngSize(bytes: Uint8Array): { width: number; height: number } | undefined {
  if (bytes.length < 24 || PNG_SIGNATURE.some((b, i) => bytes[i] !== b)) return undefined;
  // The first chunk is IHDR: length (4), type (4), then width and height, big-endian.
  if (String.fromCharCode(bytes[12], bytes[13], bytes[14], bytes[15]) !== 'IHDR') return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

/** The PNG file of a chart, from the base64 the webview sent; undefined when it is not a PNG. */
export function chartPng(runName: string, metric: string, base64: string): ExportFile | undefined {
  const bytes = new Uint8Array(Buffer.from(base64, 'base64'));
  const size = pngSize(bytes);
  if (!size) return undefined;
  return { name: `${safeFileName(runName)}-${safeFileName(metric)}.png`, kind: 'png', bytes, what: `the ${metric} chart, ${size.width}×${size.height} px` };
}
