/**
 * Remote names are bytes; in this program they are strings that keep those bytes, decoded as Python's
 * `surrogateescape` error handler does (PEP 383, `os.fsdecode`): valid UTF-8 is read as UTF-8, and every byte that
 * is not part of valid UTF-8 becomes the lone surrogate U+DC00 + byte (U+DC80–U+DCFF). No valid UTF-8 decodes to a
 * lone surrogate, so the decoding is one-to-one, and `encodeName` gives back exactly the bytes (`os.fsencode`).
 *
 * Both directions live here and nowhere else:
 * - decodeName / decodeFields: a remote command's output (the listing, a pull's walk) into names;
 * - encodeName: a name back into its bytes, for the one place a remote command line is made into bytes
 *   (shell/portable.ts printfFormat: every remote path of the listing, the walk, the file reads and hashes, inspect's
 *   reads and the metrics tails crosses it), and for local paths (localFs.ts: a pull writes the same bytes locally).
 *
 * Node itself encodes a string as UTF-8 with U+FFFD for a lone surrogate (a command line, an argv, a string path of
 * node:fs): names holding such bytes would all reach the remote side or the disk as the same EF BF BD.
 */
import { RemoteRunsError } from '../types';

/** Length of the valid UTF-8 sequence at `i` (no overlongs, surrogates or code points past U+10FFFF), or 0. */
function utf8SequenceLength(b: Buffer, i: number): number {
  const c = b[i];
  const cont = (k: number, lo = 0x80, hi = 0xbf): boolean => i + k < b.length && b[i + k] >= lo && b[i + k] <= hi;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) return cont(1, c === 0xe0 ? 0xa0 : 0x80, c === 0xed ? 0x9f : 0xbf) && cont(2) ? 3 : 0;
  if (c >= 0xf0 && c <= 0xf4) return cont(1, c === 0xf0 ? 0x90 : 0x80, c === 0xf4 ? 0x8f : 0xbf) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

/**
 * A remote name's bytes as text: UTF-8, with each byte that is not part of valid UTF-8 as U+DC00 + byte. A folder
 * literally named `bad\xff` (a backslash, `x`, `f`, `f`) and one holding the byte 0xFF are two names: the display
 * function (shared/display.ts) shows the byte `\xff` and the literal name `bad\\xff`; `--json` writes the surrogate as
 * `\udcff`, which Python's `os.fsencode` turns back into the byte. The common case (valid UTF-8) takes one native call.
 */
export function decodeName(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  if (!text.includes('\ufffd')) return text;
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const n = utf8SequenceLength(bytes, i);
    if (n > 0) {
      out += bytes.toString('utf8', i, i + n);
      i += n;
    } else {
      out += String.fromCharCode(0xdc00 + bytes[i]);
      i++;
    }
  }
  return out;
}

/**
 * NUL-separated fields as text, NULs kept (decodeName never makes a NUL). One native call unless the bytes hold
 * something that is not UTF-8; then field by field. A field must not span two calls (a caller that reads in chunks
 * passes whole fields), so a character never does either.
 */
export function decodeFields(buf: Buffer): string {
  const text = buf.toString('utf8');
  if (!text.includes('\ufffd')) return text;
  let out = '';
  let from = 0;
  for (;;) {
    const at = buf.indexOf(0, from);
    if (at < 0) break;
    out += `${decodeName(buf.subarray(from, at))}\0`;
    from = at + 1;
  }
  if (from < buf.length) out += decodeName(buf.subarray(from));
  return out;
}

/** Whether `s` holds a lone surrogate (one not paired into a code point); `bytesToo: false` counts only those that stand for no byte (not U+DC80–U+DCFF). */
export function hasLoneSurrogate(s: string, bytesToo = true): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      i++;
      continue;
    }
    if (bytesToo || c < 0xdc80 || c > 0xdcff) return true;
  }
  return false;
}

/**
 * The bytes of a name (or of any text holding names: a script, a path): the inverse of decodeName. A lone surrogate
 * U+DC80–U+DCFF is its byte; any other lone surrogate is no byte at all (no listing makes one) and is refused.
 */
export function encodeName(s: string): Buffer {
  if (!hasLoneSurrogate(s)) return Buffer.from(s, 'utf8');
  const out: Buffer[] = [];
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      i++;
      continue;
    }
    if (c < 0xdc80 || c > 0xdcff) {
      throw new RemoteRunsError('bad-address', `A name holds the lone surrogate \\u${c.toString(16)}, which is no byte (only \\xNN escapes of 0x80–0xff stand for bytes that are not UTF-8)`);
    }
    out.push(Buffer.from(s.slice(from, i), 'utf8'), Buffer.from([c - 0xdc00]));
    from = i + 1;
  }
  out.push(Buffer.from(s.slice(from), 'utf8'));
  return Buffer.concat(out);
}

/** A local path for node:fs: the string itself, or its bytes when it holds a byte that is not UTF-8 (encodeName). */
export function fsPath(p: string): string | Buffer {
  return hasLoneSurrogate(p) ? encodeName(p) : p;
}
