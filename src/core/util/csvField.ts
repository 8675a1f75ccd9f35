/** A CSV field (RFC 4180): quoted when it holds a comma, quote or line break, quotes doubled. */
export function csvField(s: string): string {
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
