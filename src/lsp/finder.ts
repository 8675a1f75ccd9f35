/**
 * Finds references to remote paths in the text of shell scripts, Python, YAML, JSON, TOML, Markdown and notebook
 * cells. Pure: text in, references out; the language server decides what they point at.
 *
 * What counts as a reference:
 * - an absolute (or `~/…`) path under a known run root (`/workspace/checkpoints/step_20000/checkpoint.pt`);
 * - `host:path` in scp style (`kpro6:/workspace/ckpt`), the host taken from the text;
 * - any absolute path after `ssh [opts] HOST`, `pct exec ID --` or `docker exec [opts] NAME` on the same logical
 *   line: the command itself says where it runs (host and/or target).
 * Never a redirection target (`2>/dev/null`), a URL, a path built from variables (`$ROOT/x`, `{name}`), or a
 * kernel path (`/dev`, `/proc`, `/sys`).
 *
 * It also finds the `2>/dev/null || echo …` fallbacks that fold every failure into one message, and the
 * `remote-runs: host/target` comment that says where a file's bare paths live.
 */

export interface Fallback {
  /** Offsets of the whole `2>/dev/null … || echo …` text. */
  start: number;
  end: number;
  text: string;
  /** What the fallback prints instead ("no checkpoints"), or the command (`true`, `:`) when it prints nothing. */
  says: string;
}

export interface PathRef {
  /** The path as written (absolute or `~/…`), without a scp host. */
  path: string;
  /** Offsets of `path` in the text. */
  start: number;
  end: number;
  /** The path holds `*`, `?` or `[…]`. */
  glob: boolean;
  /** Host as the text names it (`kpro6`, `10.1.2.6`) from `ssh` or scp style; the user separately. */
  host?: string;
  user?: string;
  /** Target from `pct exec ID` (`pct:ID`) or `docker exec NAME` (`docker:NAME`). */
  target?: string;
  /** The fallback on the same command line, after this path. */
  fallback?: Fallback;
}

export interface FindOptions {
  /** Known run roots (`/workspace`, `~/runs`): bare paths below them are references. */
  roots: readonly string[];
}

interface Context {
  pos: number;
  host?: string;
  user?: string;
  target?: string;
}

/** The `remote-runs: host/target` comment (target defaults to `host`), anywhere in the text. */
export function findPlaceComment(text: string): { host: string; target: string } | undefined {
  const m = /remote-runs:\s*([^\s/'"]+)(?:\/(host|pct:\d+|docker:[^\s'"]+))?/.exec(text);
  return m ? { host: m[1], target: m[2] ?? 'host' } : undefined;
}

/** Every remote path reference in `text`, in order (all at once: for a document of any size, see scanLines). */
export function findPathRefs(text: string, options: FindOptions): PathRef[] {
  const out: PathRef[] = [];
  for (const line of scanLines(text, options)) if (line.refs) out.push(...line.refs);
  return out;
}

/** Every `2>/dev/null … || echo …` fallback in `text`. */
export function findFallbacks(text: string): Fallback[] {
  const out: Fallback[] = [];
  for (const [from, to] of logicalLines(text)) out.push(...findFallbacksIn(text.slice(from, to)).map((f) => ({ ...f, start: f.start + from, end: f.end + from })));
  return out;
}

/**
 * Logical lines longer than this are not scanned whole (minified JSON, a notebook's embedded image, a base64 blob):
 * one such line is as much work as a whole script, in one step. scanLines reports them as `long`; a hover or a code
 * action on one scans the window of LONG_LINE_WINDOW characters either side of where it asks (findPathRefsIn).
 */
export const MAX_LINE = 20_000;
const LONG_LINE_WINDOW = 2_000;

/** One logical line of a document: its references and fallbacks, or `long` when it is over MAX_LINE and not scanned. */
export interface ScannedLine {
  from: number;
  to: number;
  refs?: PathRef[];
  fallbacks?: Fallback[];
  long?: boolean;
}

/**
 * The logical lines of `text` one at a time, each with its references and fallbacks: a document is scanned in steps
 * its caller can pause between (the language server gives the event loop a turn every few milliseconds) and stop
 * at a cap.
 */
export function* scanLines(text: string, options: FindOptions): Generator<ScannedLine, void, void> {
  const roots = normalRoots(options.roots);
  for (const [from, to] of logicalLines(text)) {
    if (to - from > MAX_LINE) yield { from, to, long: true };
    else yield { from, to, ...refsInLine(text, from, to, roots) };
  }
}

/**
 * The references on the logical lines that `from`…`to` touch (a hover: from = to = its offset), at most `maxLines`
 * of them; on a line over MAX_LINE, only those within LONG_LINE_WINDOW characters of the range (a `ssh HOST` further
 * back on that line is then not seen). Work in proportion to the lines asked about, not to the document.
 */
export function findPathRefsIn(text: string, from: number, to: number, options: FindOptions, maxLines = 200): PathRef[] {
  const roots = normalRoots(options.roots);
  const out: PathRef[] = [];
  let start = logicalLineStart(text, Math.min(from, text.length));
  for (let n = 0; n < maxLines && start <= text.length; n++) {
    const end = logicalLineEnd(text, start);
    if (end - start > MAX_LINE) {
      // The window starts and ends at whitespace, so no path in it is cut in two (a path holds none).
      const lo = Math.max(start, from - LONG_LINE_WINDOW);
      const hi = Math.min(end, to + LONG_LINE_WINDOW);
      const first = lo === start ? -1 : text.slice(lo, from).search(/\s/);
      const wFrom = first < 0 ? lo : lo + first + 1;
      let wTo = hi;
      while (wTo < end && wTo > to && !/\s/.test(text[wTo])) wTo--;
      if (wTo === to && hi < end) wTo = hi;
      out.push(...refsInLine(text, wFrom, wTo, roots).refs);
    } else {
      out.push(...refsInLine(text, start, end, roots).refs);
    }
    if (end >= to) break;
    start = end + 1;
  }
  return out.filter((r) => r.end >= from && r.start <= to);
}

function normalRoots(roots: readonly string[]): string[] {
  return roots.map((r) => (r.length > 1 ? r.replace(/\/+$/, '') : r));
}

/** The references and fallbacks of the logical line text[from, to). */
function refsInLine(text: string, from: number, to: number, roots: readonly string[]): { refs: PathRef[]; fallbacks: Fallback[] } {
  const out: PathRef[] = [];
  const line = text.slice(from, to);
  const contexts = findContexts(line);
  const fallbacks = findFallbacksIn(line).map((f) => ({ ...f, start: f.start + from, end: f.end + from }));
  for (const m of line.matchAll(PATH)) {
    const path = trimPath(m[1]);
    const at = (m.index ?? 0) + m[0].length - m[1].length;
    const end = at + path.length;
    const before = line[at - 1] ?? '';
    const after = line[at + m[1].length] ?? '';
    if (path.length < 2 || path.startsWith('//') || after === '$' || after === '{' || /[$]/.test(path)) continue;
    if (before === '>' || before === '<' || /[\w.$}\-]/.test(before)) continue;
    let host: string | undefined;
    let user: string | undefined;
    if (before === ':') {
      const scp = /(?:^|[\s'"=,(\[])(?:([\w.-]+)@)?([\w.-]{2,})$/.exec(line.slice(0, at - 1));
      if (!scp) continue; // `key:/x` glued to something that is not a host
      user = scp[1];
      host = scp[2];
    }
    const ctx = contextAt(contexts, at);
    host ??= ctx.host;
    user ??= host === ctx.host ? ctx.user : undefined;
    const target = ctx.target;
    const explicit = host !== undefined || target !== undefined;
    if (/^\/(dev|proc|sys)(\/|$)/.test(path)) continue;
    if (!explicit && !roots.some((r) => path === r || path.startsWith(r === '/' ? '/' : `${r}/`))) continue;
    const fallback = fallbacks.find((f) => f.start >= end + from);
    out.push({
      path,
      start: at + from,
      end: end + from,
      glob: /[*?[]/.test(path),
      ...(host !== undefined ? { host } : {}),
      ...(user !== undefined ? { user } : {}),
      ...(target !== undefined ? { target } : {}),
      ...(fallback ? { fallback } : {}),
    });
  }
  return { refs: out, fallbacks };
}

/** A path: `/` or `~/` then path characters (globs included); quotes, spaces and shell operators end it. */
const PATH = /(?:^|[^\w])((?:~\/|\/)[^\s'"`;|&<>(){},$\\]*)/g;

function trimPath(p: string): string {
  // Sentence punctuation and closing brackets that follow a path in prose or code, not part of it.
  let out = p;
  while (out.length > 1 && /[.:\])]$/.test(out) && !(out.endsWith(']') && out.includes('['))) out = out.slice(0, -1);
  return out;
}

/** [start, end) of each logical line: a line ending in `\\` continues on the next. */
function* logicalLines(text: string): Generator<[number, number], void, void> {
  for (let start = 0; start <= text.length; ) {
    const end = logicalLineEnd(text, start);
    yield [start, end];
    start = end + 1;
  }
}

/** Whether the physical line ending at the newline `nl` (or at the text's end) continues on the next (`\\` before it). */
function continues(text: string, nl: number): boolean {
  let j = nl - 1;
  if (text[j] === '\r') j--;
  return nl < text.length && text[j] === '\\';
}

/** The end (a newline's offset, or the text's length) of the logical line that starts at `start`. */
function logicalLineEnd(text: string, start: number): number {
  let i = start;
  for (;;) {
    const nl = text.indexOf('\n', i);
    if (nl < 0) return text.length;
    if (!continues(text, nl)) return nl;
    i = nl + 1;
  }
}

/** The start of the logical line that `offset` is on. */
function logicalLineStart(text: string, offset: number): number {
  let start = text.lastIndexOf('\n', offset - 1) + 1;
  while (start > 0 && continues(text, start - 1)) start = text.lastIndexOf('\n', start - 2) + 1;
  return start;
}

interface Token {
  text: string;
  pos: number;
}

const SSH_OPTS_WITH_ARG = new Set(['-o', '-p', '-i', '-J', '-l', '-F', '-b', '-c', '-D', '-E', '-e', '-I', '-L', '-m', '-O', '-Q', '-R', '-S', '-W', '-w', '-B']);
const DOCKER_OPTS_WITH_ARG = new Set(['-u', '--user', '-w', '--workdir', '-e', '--env', '--env-file', '--detach-keys']);

/** `ssh … HOST`, `pct exec ID`, `docker exec … NAME` on one line, each with the position it starts to apply. */
function findContexts(line: string): Context[] {
  const tokens: Token[] = [...line.matchAll(/[^\s'"`,;()[\]{}|&<>]+/g)].map((m) => ({ text: m[0], pos: m.index ?? 0 }));
  const out: Context[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i].text;
    if (t === 'ssh' || t.endsWith('/ssh')) {
      let j = i + 1;
      while (j < tokens.length && tokens[j].text.startsWith('-')) j += SSH_OPTS_WITH_ARG.has(tokens[j].text) ? 2 : 1;
      const dest = tokens[j];
      if (!dest) continue;
      const m = /^(?:ssh:\/\/)?(?:([^@]+)@)?([^:@/]+)(?::\d+)?$/.exec(dest.text);
      if (m) out.push({ pos: dest.pos + dest.text.length, host: m[2], user: m[1] });
      i = j;
    } else if (t === 'pct' && tokens[i + 1]?.text === 'exec' && /^\d+$/.test(tokens[i + 2]?.text ?? '')) {
      out.push({ pos: tokens[i + 2].pos, target: `pct:${tokens[i + 2].text}` });
      i += 2;
    } else if (t === 'docker' && tokens[i + 1]?.text === 'exec') {
      let j = i + 2;
      while (j < tokens.length && tokens[j].text.startsWith('-')) j += DOCKER_OPTS_WITH_ARG.has(tokens[j].text) ? 2 : 1;
      const name = tokens[j];
      if (name) out.push({ pos: name.pos + name.text.length, target: `docker:${name.text}` });
      i = j;
    }
  }
  return out;
}

/** The host (latest ssh before `pos`) and target (latest pct/docker exec before `pos`, after that ssh). */
function contextAt(contexts: readonly Context[], pos: number): { host?: string; user?: string; target?: string } {
  let host: string | undefined;
  let user: string | undefined;
  let target: string | undefined;
  for (const c of contexts) {
    if (c.pos > pos) break;
    if (c.host !== undefined) {
      host = c.host;
      user = c.user;
      target = undefined; // a new ssh starts outside any container
    }
    if (c.target !== undefined) target = c.target;
  }
  return { host, user, target };
}

/** `2>/dev/null` (or `&>/dev/null`) followed later on the line by `|| echo …`, `|| printf …`, `|| true`, `|| :`. */
function findFallbacksIn(line: string): Fallback[] {
  const out: Fallback[] = [];
  for (const m of line.matchAll(/(?:2|&)>\s*\/dev\/null/g)) {
    const start = m.index ?? 0;
    const or = line.indexOf('||', start + m[0].length);
    if (or < 0) continue;
    const between = line.slice(start + m[0].length, or);
    if (/[;\n]|&&/.test(between)) continue; // another command in between: not this one's fallback
    const rest = line.slice(or + 2);
    const cmd = /^\s*(echo|printf|true|:)(?=\s|$|;|'|")/.exec(rest);
    if (!cmd) continue;
    let i = or + 2 + cmd[0].length;
    const words: string[] = [];
    if (cmd[1] === 'echo' || cmd[1] === 'printf') {
      for (;;) {
        while (line[i] === ' ' || line[i] === '\t') i++;
        const c = line[i];
        if (c === undefined || /[;&|)\n]/.test(c)) break;
        if (c === '"' || c === "'") {
          const close = line.indexOf(c, i + 1);
          if (close < 0) break; // the quote that ends an enclosing `ssh host '…'`
          words.push(line.slice(i + 1, close));
          i = close + 1;
        } else {
          const w = /^[^\s;&|)'"]+/.exec(line.slice(i));
          if (!w) break;
          if (!/^-[a-zA-Z]+$/.test(w[0]) || words.length > 0) words.push(w[0]);
          i += w[0].length;
        }
      }
    }
    const end = i;
    out.push({ start, end, text: line.slice(start, end).trimEnd(), says: words.length ? words.join(' ') : cmd[1] });
  }
  return out;
}
