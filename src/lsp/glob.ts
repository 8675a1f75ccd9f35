/**
 * POSIX shell globs as the remote shell would expand them, matched here against a listing instead: `*`, `?`,
 * `[abc]`, `[!abc]`, each within one path segment (no globstar: `**` is `*`). A leading `.` is only matched by a
 * pattern that starts with `.` (as sh does).
 */

/** Does this path hold a glob character the shell would expand? */
export function hasGlob(path: string): boolean {
  return /[*?[]/.test(path);
}

/** The folder before the first segment with a glob, and the segments from there (`/a/b/*.pt` → `/a/b`, [`*.pt`]). */
export function splitGlob(path: string): { dir: string; segments: string[] } {
  const parts = path.split('/');
  const first = parts.findIndex((p) => hasGlob(p));
  if (first < 0) return { dir: path, segments: [] };
  const dirParts = parts.slice(0, first);
  const dir = dirParts.join('/') || '/';
  return { dir, segments: parts.slice(first).filter((s) => s !== '') };
}

/** One glob segment as an anchored regular expression. */
export function segmentRegExp(segment: string): RegExp {
  let re = '';
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i];
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const close = segment.indexOf(']', i + 2);
      if (close < 0) {
        re += '\\[';
        continue;
      }
      let body = segment.slice(i + 1, close);
      const negate = body.startsWith('!') || body.startsWith('^');
      if (negate) body = body.slice(1);
      re += `[${negate ? '^' : ''}${body.replace(/[\\\]^]/g, '\\$&')}]`;
      i = close;
    } else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** Does `name` (one segment) match the glob segment? Hidden names need a pattern that starts with `.`. */
export function matchSegment(segment: string, name: string): boolean {
  if (name.startsWith('.') && !segment.startsWith('.')) return false;
  return segmentRegExp(segment).test(name);
}

/** Does a relative path (`a/b/c`) match the glob segments, one segment each? */
export function matchRel(segments: readonly string[], rel: string): boolean {
  const names = rel.split('/');
  if (names.length !== segments.length) return false;
  return segments.every((s, i) => matchSegment(s, names[i]));
}
