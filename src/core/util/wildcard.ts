/**
 * The one wildcard matcher. Two dialects share one engine (a pattern compiled to single-character tokens and
 * `*`, matched by backtracking to the last `*`):
 *
 * - **OpenSSH patterns**, as OpenSSH's match.c (openbsd/src usr.bin/ssh/match.c, rev 1.38) has them:
 *   `matchPattern` is its match_pattern: `*` is any run of characters (`.` and `/` included), `?` exactly one,
 *   every other character literal (no `[…]` classes, no escapes), the whole string must match, case-sensitive.
 *   `matchPatternList` is match_pattern_list: comma-separated entries, `!` before an entry negates it; a matching
 *   negated entry vetoes the whole list (-1), else any matching entry gives 1, else 0. With `lowerPatterns` the
 *   entries are lowercased (ASCII only, like C's tolower) and the caller lowercases the string.
 *   `matchHostname` is match_hostname: the host lowercased too, entries lowercased. Used for ssh config `Host`
 *   and `Match` and for known_hosts host fields.
 * - **Filesystem globs**, as glob(3) and sh pathname expansion match one path segment: the same `*` and `?` (a
 *   segment holds no `/`, so neither ever crosses one), plus bracket expressions `[abc]`, `[a-z]`, `[!abc]` (and
 *   `[^abc]`, which glibc and bash accept too), a `]` right after `[` or `[!` being a member; a `[` without its
 *   `]` is literal. A name that starts with `.` is only matched by a segment that starts with `.`. Used for ssh
 *   config `Include` (OpenSSH hands it to glob(3)) and the language server's globs (what the remote shell would
 *   expand). Not supported: `[[:class:]]` and backslash escapes (a backslash is literal, as it was before).
 *
 * Characters are UTF-16 code units (OpenSSH compares bytes: a `?` there matches one byte of a UTF-8 name).
 * One more deliberate difference: match_pattern_list gives up (0) on an entry of 1023 characters or more, its
 * buffer's size; here entries have no length limit.
 *
 * Pure functions; this folder never imports `vscode`.
 */

/** A compiled pattern: single-character matchers and stars. */
type Token =
  | { kind: 'char'; char: string }
  | { kind: 'any' }
  | { kind: 'star' }
  | { kind: 'class'; negated: boolean; members: string; ranges: [string, string][] };

// ---------------------------------------------------------------------------------------------------------
// The engine

function tokenMatches(t: Exclude<Token, { kind: 'star' }>, c: string): boolean {
  switch (t.kind) {
    case 'char':
      return t.char === c;
    case 'any':
      return true;
    case 'class': {
      const inside = t.members.includes(c) || t.ranges.some(([lo, hi]) => lo <= c && c <= hi);
      return inside !== t.negated;
    }
  }
}

/**
 * Whole-string match. With only single-character tokens besides `*`, going back to the last `*` and letting it take
 * one more character finds a match whenever one exists (what match_pattern's recursion finds), in O(n·m).
 */
function matchTokens(tokens: readonly Token[], s: string): boolean {
  let p = 0;
  let i = 0;
  let starP = -1;
  let starI = 0;
  while (i < s.length) {
    const t = tokens[p];
    if (t !== undefined && t.kind === 'star') {
      starP = p++;
      starI = i;
    } else if (t !== undefined && tokenMatches(t, s[i])) {
      p++;
      i++;
    } else if (starP >= 0) {
      p = starP + 1;
      i = ++starI;
    } else {
      return false;
    }
  }
  while (p < tokens.length && tokens[p].kind === 'star') p++;
  return p === tokens.length;
}

// ---------------------------------------------------------------------------------------------------------
// OpenSSH patterns (match.c)

/** Does the text hold an OpenSSH wildcard (`*` or `?`)? A Host argument without one names one host. */
export function hasWildcard(pattern: string): boolean {
  return pattern.includes('*') || pattern.includes('?');
}

function compileOpenSsh(pattern: string): Token[] {
  const tokens: Token[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    tokens.push(c === '*' ? { kind: 'star' } : c === '?' ? { kind: 'any' } : { kind: 'char', char: c });
  }
  return tokens;
}

/** OpenSSH's match_pattern: does the whole of `s` match `pattern` (`*`, `?`, all else literal)? Case-sensitive. */
export function matchPattern(s: string, pattern: string): boolean {
  return matchTokens(compileOpenSsh(pattern), s);
}

/**
 * OpenSSH's match_pattern_list over a comma-separated list with `!` negation: -1 when a negated entry matches
 * (it vetoes the list, whatever else matches), 1 when a plain entry matches, 0 otherwise. An empty entry (`a,,b`)
 * matches only the empty string; a trailing comma adds no entry, and an empty list matches nothing.
 * `lowerPatterns` lowercases the entries (ASCII, as C's tolower); lowercasing `s` is the caller's job.
 */
export function matchPatternList(s: string, list: string, lowerPatterns: boolean): -1 | 0 | 1 {
  let gotPositive: 0 | 1 = 0;
  let i = 0;
  while (i < list.length) {
    const negated = list[i] === '!';
    if (negated) i++;
    let end = list.indexOf(',', i);
    if (end < 0) end = list.length;
    const entry = lowerPatterns ? asciiLower(list.slice(i, end)) : list.slice(i, end);
    i = end < list.length ? end + 1 : end;
    if (matchPattern(s, entry)) {
      if (negated) return -1;
      gotPositive = 1;
    }
  }
  return gotPositive;
}

/** OpenSSH's match_hostname: `host` and the entries lowercased (ASCII), then matchPatternList. */
export function matchHostname(host: string, list: string): -1 | 0 | 1 {
  return matchPatternList(asciiLower(host), list, true);
}

/** A–Z to a–z, nothing else: what OpenSSH's lowercase() and tolower() do in the C locale. */
export function asciiLower(s: string): string {
  return /[A-Z]/.test(s) ? s.replace(/[A-Z]+/g, (m) => m.toLowerCase()) : s;
}

// ---------------------------------------------------------------------------------------------------------
// Filesystem globs (glob(3), sh pathname expansion), one path segment at a time

/** Does this text hold a character the shell (or glob(3)) would expand: `*`, `?` or `[`? */
export function hasGlob(text: string): boolean {
  return /[*?[]/.test(text);
}

function compileGlobSegment(segment: string): Token[] {
  const tokens: Token[] = [];
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i];
    if (c === '*') tokens.push({ kind: 'star' });
    else if (c === '?') tokens.push({ kind: 'any' });
    else if (c === '[') {
      const parsed = parseBracket(segment, i);
      if (parsed) {
        tokens.push(parsed.token);
        i = parsed.end;
      } else tokens.push({ kind: 'char', char: '[' });
    } else tokens.push({ kind: 'char', char: c });
  }
  return tokens;
}

/** The bracket expression opening at `open`, and the index of its `]`; undefined when it is never closed. */
function parseBracket(s: string, open: number): { token: Token; end: number } | undefined {
  let j = open + 1;
  const negated = s[j] === '!' || s[j] === '^';
  if (negated) j++;
  let members = '';
  const ranges: [string, string][] = [];
  for (let first = true; j < s.length; first = false) {
    const c = s[j];
    if (c === ']' && !first) return { token: { kind: 'class', negated, members, ranges }, end: j };
    if (s[j + 1] === '-' && j + 2 < s.length && s[j + 2] !== ']') {
      ranges.push([c, s[j + 2]]); // a reversed range (z-a) holds nothing
      j += 3;
    } else {
      members += c;
      j++;
    }
  }
  return undefined;
}

/**
 * A matcher for one glob segment (`*.pt`, `step_[0-9]*`), compiled once for many names. A name starting with `.`
 * only matches a segment that starts with `.`, as in glob(3) and the shell.
 */
export function globSegmentMatcher(segment: string): (name: string) => boolean {
  const tokens = compileGlobSegment(segment);
  const dotLiteral = segment.startsWith('.');
  return (name) => (dotLiteral || !name.startsWith('.')) && matchTokens(tokens, name);
}

/** Does one name (a single path segment) match one glob segment? */
export function matchGlobSegment(segment: string, name: string): boolean {
  return globSegmentMatcher(segment)(name);
}
