/**
 * A table of text cells (a header row, then the rows) as text to paste elsewhere: CSV (RFC 4180) and a GitHub
 * Markdown table. One home for both, used by the eval table, the run table, a chart's CSV export and the CLI.
 */

/** A number as a spreadsheet reads one: a decimal with an optional sign, fraction and exponent (`-0.5`, `1e-05`). */
const PLAIN_NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * A cell as text a spreadsheet shows and never runs: OWASP's CSV injection rule
 * (https://owasp.org/www-community/attacks/CSV_Injection) prefixes `'` to a cell that begins with `=`, `+`, `-`, `@`,
 * a tab or a carriage return, which a spreadsheet would read as a formula (`=HYPERLINK(…)`, `-2+3+cmd|…`); csvField
 * then quotes it. A plain number (`-0.5`, `+1e-05`) is a number to a spreadsheet, not a formula, and is left as it is,
 * so values stay numbers. A cell that already begins with `'` gets one more: a spreadsheet hides one leading `'`, so
 * the text shown is always the cell's own.
 */
export function neutralizeCell(s: string): string {
  if (s === '' || !/^[=+\-@\t\r']/.test(s)) return s;
  return PLAIN_NUMBER.test(s) ? s : `'${s}`;
}

/**
 * A CSV field (RFC 4180): quoted when it holds a comma, quote or line break, quotes doubled; a cell a spreadsheet
 * would read as a formula is neutralised first (neutralizeCell) and quoted. Every CSV this program writes goes
 * through here (the CLI's `metrics --csv`, a chart's Save as CSV…, the eval and run tables' Copy as CSV).
 */
export function csvField(cell: string): string {
  const s = neutralizeCell(cell);
  return s !== cell || /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** CSV (RFC 4180): every field as csvField writes it; lines end in CRLF. */
export function cellsCsv(cells: readonly (readonly string[])[]): string {
  return cells.map((row) => row.map(csvField).join(',') + '\r\n').join('');
}

/**
 * A GitHub-flavoured Markdown table: `|` and `\` escaped, line breaks flattened to spaces, `<` and `&` as entities
 * (a name from a remote folder must not become markup where the table is pasted), `numeric` columns right-aligned.
 */
export function cellsMarkdown(cells: readonly (readonly string[])[], numeric: readonly boolean[]): string {
  const cell = (s: string): string =>
    s.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/\r?\n|\r/g, ' ');
  const [head, ...body] = cells;
  const align = head!.map((_, i) => (numeric[i] ? '---:' : '---'));
  const line = (row: readonly string[]): string => `| ${row.map(cell).join(' | ')} |`;
  return [line(head!), `| ${align.join(' | ')} |`, ...body.map(line)].join('\n') + '\n';
}
