/**
 * Speed and time left from a sliding window of samples, and the one line both faces (the CLI's progress, the
 * extension's notification) show for a download. Pure, with the clock passed in for tests.
 */
import { formatBytes } from '../util/format';
import type { DownloadProgress } from './types';

export class SpeedMeter {
  private samples: { t: number; bytes: number }[] = [];

  constructor(private readonly windowMs = 5000) {}

  /** Record the running total of bytes fetched at time `t` (ms). */
  sample(t: number, totalFetched: number): void {
    this.samples.push({ t, bytes: totalFetched });
    while (this.samples.length > 2 && t - this.samples[1].t >= this.windowMs) this.samples.shift();
  }

  /** Bytes per second over the window; 0 until two samples 100 ms apart exist. */
  get bytesPerSec(): number {
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    if (!first || !last || last.t - first.t < 100) return 0;
    return ((last.bytes - first.bytes) * 1000) / (last.t - first.t);
  }

  /** Seconds left for `remaining` bytes, undefined while the speed is unknown. */
  eta(remaining: number): number | undefined {
    const s = this.bytesPerSec;
    return s > 0 ? remaining / s : undefined;
  }
}

/**
 * A download's progress in words: while bytes arrive, how many, how fast and the time left; once every byte is here,
 * that the remote side is finishing its SHA-256 (no time left to show: a 3 GB file takes the remote ~10 s with
 * sha256sum); then, while ranges are hashed on both sides, how far that is (a resumed 3 GB took about a minute),
 * never a stale "1 s left". Before any of it, that the files are being listed; after it, how many files are in place
 * (each file's record written and the file renamed: with 100,000 small files the longest phase, never labelled as
 * waiting for a hash).
 */
export function progressText(p: DownloadProgress): string {
  const parts: string[] = [];
  if (p.phase === 'list') return 'listing the files of the checkpoint';
  if (p.phase === 'finish') {
    const total = p.filesToPlace ?? 0;
    return `${formatBytes(p.bytesDone)} of ${formatBytes(p.bytesTotal)} · all here and proven, putting files in place · ${formatCount(p.filesPlaced ?? 0)} of ${formatCount(total)}`;
  }
  if (p.phase === 'verify') {
    const total = p.verifyTotal ?? 0;
    parts.push(total > 0 ? `verifying SHA-256 · ${formatBytes(p.verifyDone ?? 0)} of ${formatBytes(total)}` : 'verifying SHA-256');
  } else if (p.bytesTotal > 0 && p.bytesDone >= p.bytesTotal) {
    parts.push(`${formatBytes(p.bytesDone)} of ${formatBytes(p.bytesTotal)}`, 'waiting for the remote SHA-256');
  } else {
    parts.push(`${formatBytes(p.bytesDone)} of ${formatBytes(p.bytesTotal)}`);
    if (p.bytesPerSec > 0) parts.push(`${formatBytes(p.bytesPerSec)}/s`);
    if (p.etaSec !== undefined) parts.push(`${formatEta(p.etaSec)} left`);
  }
  // Files put in place as they arrive (small ones, a batch at a time): how many are done says more than which came last.
  if (p.fileCount > 1 && p.phase === 'transfer' && (p.filesPlaced ?? 0) > 0) parts.push(`${formatCount(p.filesPlaced ?? 0)} of ${formatCount(p.filesToPlace ?? p.fileCount)} files in place`);
  else if (p.fileCount > 1) parts.push(`file ${p.fileIndex} of ${p.fileCount}`);
  return parts.join(' · ');
}

/** 100000 as 100,000: a count of files, read at a glance. */
function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

function formatEta(sec: number): string {
  if (sec < 90) return `${Math.max(1, Math.round(sec))} s`;
  if (sec < 5400) return `${Math.round(sec / 60)} min`;
  return `${(sec / 3600).toFixed(1)} h`;
}
