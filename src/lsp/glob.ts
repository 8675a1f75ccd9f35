/**
 * POSIX shell globs as the remote shell would expand them, matched here against a listing instead: `*`, `?`,
 * `[abc]`, `[!abc]`, each within one path segment (no globstar: `**` is `*`). A leading `.` is only matched by a
 * pattern that starts with `.` (as sh does). The matching itself is the filesystem dialect of the one wildcard
 * matcher (src/core/util/wildcard.ts); this file splits paths into its segments.
 */
import { hasGlob, matchGlobSegment } from '../core/util/wildcard';

/** Does this path hold a glob character the shell would expand? */
export { hasGlob };

/** The folder before the first segment with a glob, and the segments from there (`/a/b/*.pt` → `/a/b`, [`*.pt`]). */
export function splitGlob(path: string): { dir: string; segments: string[] } {
  const parts = path.split('/');
  const first = parts.findIndex((p) => hasGlob(p));
  if (first < 0) return { dir: path, segments: [] };
  const dirParts = parts.slice(0, first);
  const dir = dirParts.join('/') || '/';
  return { dir, segments: parts.slice(first).filter((s) => s !== '') };
}

/** Does `name` (one segment) match the glob segment? Hidden names need a pattern that starts with `.`. */
export function matchSegment(segment: string, name: string): boolean {
  return matchGlobSegment(segment, name);
}

/** Does a relative path (`a/b/c`) match the glob segments, one segment each? */
export function matchRel(segments: readonly string[], rel: string): boolean {
  const names = rel.split('/');
  if (names.length !== segments.length) return false;
  return segments.every((s, i) => matchSegment(s, names[i]));
}
