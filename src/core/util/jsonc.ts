/**
 * JSON with comments, as VS Code's settings files are written: `//` and `/* *\/` comments and trailing commas.
 * Total: every input gives a value or an error message, never a throw. Used only to see which keys a workspace's
 * settings file holds (VS Code itself drops the ones it will not apply before an extension can see them).
 */
export function parseJsonc(text: string): { value: unknown } | { error: string } {
  let out = '';
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    if (c === '"') {
      // A string, copied whole (escapes included) so a "//" inside it is not a comment.
      let j = i + 1;
      while (j < n && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < n && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      if (end < 0) return { error: 'unterminated /* comment' };
      out += ' ';
      i = end + 2;
    } else {
      out += c;
      i++;
    }
  }
  // Trailing commas: a comma followed (after blanks) by } or ]. Strings were copied as they are, so scan again
  // outside strings only.
  let cleaned = '';
  for (let k = 0; k < out.length; k++) {
    const c = out[k];
    if (c === '"') {
      let j = k + 1;
      while (j < out.length && out[j] !== '"') j += out[j] === '\\' ? 2 : 1;
      cleaned += out.slice(k, j + 1);
      k = j;
      continue;
    }
    if (c === ',') {
      let j = k + 1;
      while (j < out.length && /\s/.test(out[j])) j++;
      if (out[j] === '}' || out[j] === ']') continue;
    }
    cleaned += c;
  }
  if (cleaned.trim() === '') return { value: {} };
  try {
    return { value: JSON.parse(cleaned) as unknown };
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
}
