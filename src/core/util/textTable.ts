/**
 * A table of text cells (a header row, then the rows) as text to paste elsewhere: CSV (RFC 4180) and a GitHub
 * Markdown table. One home for both, used by the eval table, the run table, a chart's CSV export and the CLI.
 */

/** A CSV field (RFC 4180): quoted when it holds a comma, quote or line break, quotes doubled. */
export function csvField(s: string): string {
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
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
