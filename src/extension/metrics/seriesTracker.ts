/**
 * What one metric of one run looks like on the wire, and what the webview already has of it. The first send
 * (and any change of width, range, smoothing or segments) is the whole series min-max decimated to ~1 point per
 * pixel, each with its bucket's min and max (the band); after that, new points of a live run are decimated at the same bucket width and sent as an
 * `append`, so an update of 1,000 lines costs a few points, not a re-send. Once the appended points would push
 * the webview above ~3 points per pixel, the series is sent whole again, so its copy stays bounded.
 */
import { decimateMinMax, type Points, type Series } from '../../core/metrics';
import type { SeriesChunk, SeriesUpdate, XRange } from '../../shared/metricsProtocol';
import { IncrementalEma } from './incrementalEma';

export interface TrackerView {
  width: number;
  range: XRange | null;
  smoothing: number;
}

interface Sent {
  /** Points the webview holds. */
  count: number;
  /** Source index of the last point sent. */
  lastIndex: number;
  segments: number;
  /** Steps per bucket of the last whole send (0: cannot append, send whole). */
  bucket: number;
  width: number;
  range: XRange | null;
  smoothing: number;
}

/** Significant digits kept for smoothed values: a smoothed curve needs no more, and bytes matter per update. */
const SMOOTH_DIGITS = 7;

export class SeriesTracker {
  private source: Series | undefined;
  /** The source's restartCount when last read: a restart drops points, so what was smoothed and sent is stale. */
  private restarts = 0;
  private ema: IncrementalEma | undefined;
  private sent: Sent | undefined;

  constructor(readonly key: string) {}

  /** The smoothed values for the current source (extended to its length). */
  smoothed(series: Series, smoothing: number): IncrementalEma {
    if (this.source !== series || series.restartCount !== this.restarts || !this.ema || this.ema.weight !== new IncrementalEma(smoothing).weight) {
      this.source = series;
      this.restarts = series.restartCount;
      this.ema = new IncrementalEma(smoothing);
      this.sent = undefined;
    }
    this.ema.extend(series, series.segmentStarts);
    return this.ema;
  }

  /** The whole series for this view (a snapshot), and remember it as sent. */
  whole(series: Series, view: TrackerView): SeriesChunk {
    const s = this.smoothed(series, view.smoothing);
    const segs = series.segments;
    let xMin = view.range?.xMin;
    let xMax = view.range?.xMax;
    if (!view.range && segs.length > 0) {
      // One bucket grid across every segment, so a resumed run is drawn at the same resolution throughout.
      xMin = Infinity;
      xMax = -Infinity;
      for (const g of segs) {
        xMin = Math.min(xMin, series.xAt(g.start));
        xMax = Math.max(xMax, series.xAt(g.end - 1));
      }
    }
    const d = decimateMinMax({ points: series, segments: segs }, { xMin, xMax, width: view.width });
    const chunk = toChunk(this.key, series, s, d.index, d.segmentStarts, d);
    const lastIndex = d.index.length ? d.index[d.index.length - 1] : -1;
    const span = xMax !== undefined && xMin !== undefined && Number.isFinite(xMax - xMin) ? xMax - xMin : 0;
    this.sent = {
      count: chunk.x.length,
      lastIndex,
      segments: segs.length,
      bucket: span > 0 ? span / Math.max(1, Math.floor(view.width)) : 0,
      width: view.width,
      range: view.range,
      smoothing: view.smoothing,
    };
    return chunk;
  }

  /**
   * What to send after the series changed: undefined when the webview's copy is still right, an `append` of
   * the new tail when possible, else a `replace` with the whole series.
   */
  update(series: Series, view: TrackerView): SeriesUpdate | undefined {
    const sameSource = this.source === series && this.restarts === series.restartCount;
    this.smoothed(series, view.smoothing);
    const sent = this.sent;
    const n = series.length;
    const viewSame = sent && sent.width === view.width && sent.smoothing === view.smoothing && sameRange(sent.range, view.range);
    if (!sent || !sameSource || !viewSame || series.segments.length !== sent.segments) {
      return { mode: 'replace', ...this.whole(series, view) };
    }
    if (sent.lastIndex >= n - 1) return undefined;
    if (view.range) {
      // A zoomed view changes only when a new point lands inside it (or is the first one past its end).
      if (series.xAt(sent.lastIndex + 1) > view.range.xMax && sent.lastIndex >= 0 && series.xAt(sent.lastIndex) > view.range.xMax) {
        return undefined;
      }
      return { mode: 'replace', ...this.whole(series, view) };
    }
    if (sent.bucket <= 0 || sent.lastIndex < 0) return { mode: 'replace', ...this.whole(series, view) };
    const from = sent.lastIndex + 1;
    const tail: Points = { length: n - from, xAt: (i) => series.xAt(i + from), yAt: (i) => series.yAt(i + from) };
    const tailSpan = series.xAt(n - 1) - series.xAt(from);
    const width = Math.max(1, Math.ceil(tailSpan / sent.bucket));
    const d = decimateMinMax({ points: tail }, { width });
    if (sent.count + d.index.length > 3 * view.width + 16) return { mode: 'replace', ...this.whole(series, view) };
    const index = d.index.map((i) => i + from);
    const band = d.loIndex && d.hiIndex ? { loIndex: d.loIndex.map((i) => i + from), hiIndex: d.hiIndex.map((i) => i + from) } : undefined;
    const chunk = toChunk(this.key, series, this.ema!, index, [], band);
    sent.count += chunk.x.length;
    sent.lastIndex = index[index.length - 1];
    return { mode: 'append', ...chunk };
  }

  /** Forget what was sent: the next update is whole. */
  invalidate(): void {
    this.sent = undefined;
  }
}

function sameRange(a: XRange | null, b: XRange | null): boolean {
  return a === b || (a !== null && b !== null && a.xMin === b.xMin && a.xMax === b.xMax);
}

function round(v: number): number {
  return Number.isFinite(v) ? Number(v.toPrecision(SMOOTH_DIGITS)) : v;
}

/** The band's source indices (decimate.ts), when points stand for buckets. */
interface BandIndex {
  loIndex?: number[];
  hiIndex?: number[];
}

function toChunk(key: string, series: Series, smoothed: IncrementalEma, index: number[], segStarts: number[], band?: BandIndex): SeriesChunk {
  const ts = series.hasTime;
  const x = new Array<number>(index.length);
  const y = new Array<number>(index.length);
  const s = new Array<number>(index.length);
  const t = ts ? new Array<number>(index.length) : undefined;
  for (let k = 0; k < index.length; k++) {
    const i = index[k];
    x[k] = series.xAt(i);
    y[k] = series.yShown(i);
    s[k] = round(smoothed.at(i));
    if (t) t[k] = series.timeAt(i);
  }
  const chunk: SeriesChunk = { key, x, y, s, segmentStarts: segStarts, total: series.length };
  if (t) chunk.t = t;
  if (band?.loIndex && band.hiIndex) {
    chunk.lo = band.loIndex.map((i) => series.yShown(i));
    chunk.hi = band.hiIndex.map((i) => series.yShown(i));
  }
  return chunk;
}
