/**
 * Remote text in the language server's answers. Names of runs, checkpoints, files and metric keys, and messages that
 * quote remote bytes, can hold terminal controls, bidi overrides (U+202E) and newlines (shown escaped by the one
 * display function, src/shared/display.ts), and markdown: a hover is markdown, so a file named
 * ``[x](command:workbench.action.terminal.sendSequence?…)`` or holding a backtick would otherwise become a link, a
 * command or the end of a code span. Hovers use mdCode and mdText; plain-text answers (diagnostic messages,
 * completion labels, link tooltips, code action titles) use plainCode or displayName/displayText.
 */
import { displayName, displayText } from '../shared/display';

/**
 * A remote name as inline code in markdown: displayName's escapes, in a code span whose fence of backticks is longer
 * than any run of backticks inside it, padded with a space when it starts or ends with a backtick or a space
 * (CommonMark 0.31 §6.1 "Code spans": nothing inside one is a link, emphasis or HTML, and one space is stripped
 * from each side when both sides have one).
 */
export function mdCode(name: string): string {
  const shown = displayName(name);
  if (shown === '') return '` `';
  let longest = 0;
  for (const run of shown.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  const fence = '`'.repeat(longest + 1);
  const pad = /^[` ]|[` ]$/.test(shown) ? ' ' : '';
  return `${fence}${pad}${shown}${pad}${fence}`;
}

/**
 * Remote text as markdown text: displayText's escapes, then a backslash before every character that could start
 * markdown (CommonMark §2.4: any ASCII punctuation may be escaped so): `\` `` ` `` `*` `[` `]` `<` `>` `&` `~` `|`
 * `!` `@` anywhere, `_` unless inside a word (where it cannot start emphasis: `exp_avg` stays as it is), `:` before
 * `//`, `.` after `www` (with `@`: no bare `https://…`, `www.…` or e-mail address turns into a link), and at a line's
 * start the characters that open a block (`#`, `+`, `-`, `=`, and `1.` before a space).
 */
export function mdText(text: string): string {
  return displayText(text)
    .replace(/[\\`*[\]<>&~|!@]|:(?=\/\/)/g, (c) => `\\${c}`)
    .replace(/_/g, (c, i: number, s: string) => (/[\p{L}\p{N}]/u.test(s[i - 1] ?? '') && /[\p{L}\p{N}]/u.test(s[i + 1] ?? '') ? c : '\\_'))
    .replace(/\b(www)\./gi, '$1\\.')
    .replace(/^([ \t]*)([#+=-]|\d+(?=[.)](?:\s|$)))/gm, (_m, ws: string, c: string) => (/^\d/.test(c) ? `${ws}${c}\\` : `${ws}\\${c}`));
}

/** A remote name in plain text (a diagnostic message): displayName's escapes, between backticks as the messages quote. */
export function plainCode(name: string): string {
  return `\`${displayName(name)}\``;
}
