/**
 * How remote text is shown on a terminal, in a tree label or in a message: the one display function.
 *
 * Remote names, metric keys, tensor names and the bytes of remote files quoted in errors can hold terminal controls
 * (ESC starts CSI/OSC sequences: `ESC[2J` clears the screen, OSC 52 writes the clipboard, `ESC]0;…` the title), a
 * bare CR that overwrites the line, a newline that forges a row, and Unicode bidi controls that reorder what follows
 * (U+202E). Shown here as printable escapes:
 *
 * - C0 controls (U+0000–U+001F) and DEL (U+007F): `\xNN`, the byte's value, as `ls -b` writes them;
 * - C1 controls (U+0080–U+009F), the bidi embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), the
 *   marks U+200E, U+200F, U+061C, and lone UTF-16 surrogates: `\uNNNN`;
 * - a byte of a remote name that is not UTF-8 arrives as a lone surrogate U+DC80–U+DCFF (listParse.ts decodeName,
 *   Python's `surrogateescape`, PEP 383) and is shown `\xNN` with that byte's value (0x80–0xFF, so never the same
 *   text as a C0 control or DEL);
 * - in a name (displayName), a backslash is shown `\\`: without it a folder literally named `bad\xff` and one whose
 *   name holds the byte 0xFF would look the same. With it, every escape starts at an odd run of backslashes, so the
 *   shown text reads back to exactly one name (the property test checks that two names never show alike).
 *
 * The shown form of a name is also how it is typed in a CLI address (parseShownName reads it back; address.ts), so
 * what `ls` shows can be pasted as it is.
 *
 * Everything else (letters of any script, emoji, combining marks, `\t` in messages) is shown as it is.
 */

/** Characters that must never reach a terminal raw (see the file's head). Tab and newline are among them. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]/;
const UNSAFE_ALL = new RegExp(UNSAFE.source, 'g');
/** UNSAFE but keeping `\n` and `\t`: the structure of text the program itself lays out in lines and columns. */
const UNSAFE_IN_TEXT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]/g;

// What a replace visits: a well-formed surrogate pair (kept: it is one printable character) or one character to escape.
const PAIR = '[\\ud800-\\udbff][\\udc00-\\udfff]';
const NAME_PIECES = new RegExp(`\\\\|${PAIR}|${UNSAFE.source}`, 'g');
const TEXT_PIECES = new RegExp(`${PAIR}|${UNSAFE_IN_TEXT.source}`, 'g');

function escapeChar(c: string): string {
  const code = c.charCodeAt(0);
  if (code < 0x20 || code === 0x7f) return `\\x${code.toString(16).padStart(2, '0')}`;
  // A byte that was not UTF-8 in a remote name (decodeName): its own value.
  if (code >= 0xdc80 && code <= 0xdcff && c.length === 1) return `\\x${(code - 0xdc00).toString(16)}`;
  return `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * A remote name (a run, a checkpoint, a file, a metric key, a tensor) as it is shown: one line, no control, no bidi
 * reordering, and two different names never shown alike (a backslash is doubled). `--json` output keeps names exact
 * instead (JSON has escapes of its own).
 */
export function displayName(name: string): string {
  if (!UNSAFE.test(name) && !name.includes('\\')) return name;
  // Well-formed surrogate pairs (emoji, rare scripts) are printable: only lone halves are escaped.
  return name.replace(NAME_PIECES, (c) => (c === '\\' ? '\\\\' : c.length === 2 ? c : escapeChar(c)));
}

/**
 * The inverse of displayName: the name a shown form stands for. This is how a name is typed in an address (the
 * address form and the shown form are one escaping): `\\` is a backslash, `\xNN` a C0 control, DEL or (0x80–0xff) a
 * byte that is not UTF-8, `\uNNNN` a C1 control, a bidi control or mark, or a lone surrogate; hex digits in either
 * case. Anything else after a backslash, and an escape displayName would not write (`\x41` for `A`, `\u00e9` for
 * `é`, `\udcff` for `\xff`), is refused with why, so a typed form reads back to one name only. Characters that
 * displayName would escape but arrive raw (a tab typed into a quoted argument) are kept as they are.
 * Throws an Error whose message says what is wrong.
 */
export function parseShownName(shown: string): string {
  if (!shown.includes('\\')) return shown;
  return shown.replace(/\\(\\|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4}))?/g, (m: string, esc: string | undefined, x: string | undefined, u: string | undefined, at: number) => {
    if (esc === undefined) {
      throw new Error(`a backslash starts an escape, as names are shown (\\\\ for a backslash, \\xNN, \\uNNNN), and "${shown.slice(at, at + 2)}" is none`);
    }
    if (esc === '\\') return '\\';
    const code = parseInt(x ?? u!, 16);
    const c = x !== undefined && code >= 0x80 ? String.fromCharCode(0xdc00 + code) : String.fromCharCode(code);
    const canonical = displayName(c);
    if (canonical !== m.toLowerCase()) throw new Error(`${m} is not how a name is shown: write ${canonical}`);
    return c;
  });
}

/**
 * Text that is about to be written to a terminal (the CLI's stdout and stderr, a terminal the extension writes to):
 * every control and bidi character escaped as in displayName but `\n` and `\t`, which lay out its lines and columns,
 * and backslashes left as they are (text that quotes a name already went through displayName, whose escapes must not
 * be doubled again). Applied once, at the writer, so no message can forget it.
 */
export function displayText(text: string): string {
  UNSAFE_IN_TEXT.lastIndex = 0;
  if (!UNSAFE_IN_TEXT.test(text)) return text;
  UNSAFE_IN_TEXT.lastIndex = 0;
  return text.replace(TEXT_PIECES, (c) => (c.length === 2 ? c : escapeChar(c)));
}

/** Whether `text` holds any character displayName escapes but the backslash (for tests and assertions). */
export function hasUnsafe(text: string): boolean {
  UNSAFE_ALL.lastIndex = 0;
  for (const m of text.matchAll(UNSAFE_ALL)) {
    const i = m.index;
    const c = text.charCodeAt(i);
    // A well-formed surrogate pair is a printable character.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) continue;
    if (c >= 0xdc00 && c <= 0xdfff && i > 0 && (text.charCodeAt(i - 1) & 0xfc00) === 0xd800) continue;
    return true;
  }
  return false;
}

/**
 * A log stream's line ends as a terminal is shown them: CRLF and a bare CR are line ends. A bare CR is how a progress
 * bar redraws its line (tqdm, pip, wget, every ML training script's eval loop): escaped it would show as `\x0d`
 * between every redraw, raw it would let the log move the cursor over what was written before. As a line end each
 * redraw is a line of its own. Stateful across chunks: a CR at a chunk's end waits for the next chunk, which may
 * begin with its LF. The result still goes through displayText at its writer.
 */
export class LogLineEnds {
  private heldCr = false;

  push(text: string): string {
    let s = this.heldCr ? `\r${text}` : text;
    this.heldCr = s.endsWith('\r');
    if (this.heldCr) s = s.slice(0, -1);
    return s.includes('\r') ? s.replace(/\r\n?/g, '\n') : s;
  }

  /** The end of the stream: a CR held back is a line end. */
  end(): string {
    const out = this.heldCr ? '\n' : '';
    this.heldCr = false;
    return out;
  }
}
