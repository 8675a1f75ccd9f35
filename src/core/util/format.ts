/** Human formatting shared by the tree, the CLI and the language server. */

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];

/** A checkpoint's size: `≥ 1.2 GB` when the listing saw only part of its files (below the walk's depth). */
export function formatCheckpointBytes(c: { bytes: number; partialSize?: true }): string {
  return c.partialSize ? `≥ ${formatBytes(c.bytes)}` : formatBytes(c.bytes);
}

/**
 * 3221225472 → "3.2 GB": decimal units, as `ls -lh --si`, most file managers and the download's progress show them.
 * The one byte formatter for what users read (sizes, progress, free space in a disk-full message): one convention,
 * so the same number never reads as GB in one place and GiB in the next.
 */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '?';
  let v = bytes;
  let i = 0;
  while (v >= 1000 && i < UNITS.length - 1) {
    v /= 1000;
    i++;
  }
  return i === 0 ? `${v} B` : `${v < 10 ? v.toFixed(1) : Math.round(v)} ${UNITS[i]}`;
}

/** Age relative to `now`: "just now", "5 min ago", "3 h ago", "2 d ago". */
export function formatAge(mtimeMs: number, nowMs: number): string {
  const s = Math.max(0, Math.round((nowMs - mtimeMs) / 1000));
  if (s < 45) return 'just now';
  if (s < 3600) return `${Math.max(1, Math.round(s / 60))} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}
