/**
 * CSV we write never holds a cell a spreadsheet would run as a formula (OWASP CSV injection: `=`, `+`, `-`, `@`, tab,
 * CR first), yet every cell shows its own text, and numbers (`-0.5`) stay numbers. The spreadsheet here is a model
 * of what Excel and LibreOffice do with a CSV cell: one leading `'` is hidden and makes the rest text; a cell that
 * begins with a formula character and is not a plain number is a formula.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { csvField, cellsCsv, neutralizeCell } from '../../src/core/util/textTable';
import { seriesCsv } from '../../src/core/metrics/series/seriesCsv';
import { Series } from '../../src/core/metrics/series/series';

/** The fields of one CSV record (RFC 4180), as a spreadsheet's import splits them. */
function parseRecord(line: string): string[] {
  const cells: string[] = [];
  let i = 0;
  for (;;) {
    let cell = '';
    if (line[i] === '"') {
      i++;
      for (;;) {
        if (i >= line.length) throw new Error(`unterminated quote in ${JSON.stringify(line)}`);
        if (line[i] === '"') {
          if (line[i + 1] === '"') {
            cell += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        cell += line[i++];
      }
    } else {
      while (i < line.length && line[i] !== ',') cell += line[i++];
    }
    cells.push(cell);
    if (i >= line.length) return cells;
    assert.equal(line[i], ',', `a field ends at a comma in ${JSON.stringify(line)}`);
    i++;
  }
}

const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const isFormula = (cell: string): boolean => /^[=+\-@\t\r]/.test(cell) && !NUMBER.test(cell);
const shown = (cell: string): string => (cell.startsWith("'") ? cell.slice(1) : cell);

/** Strings that favour the characters that matter here. */
const hostile = fc.oneof(
  fc.string({ unit: fc.constantFrom('=', '+', '-', '@', '\t', '\r', '\n', "'", '"', ',', '1', '.', 'e', 'a', ' ', '|', '(', ')') }),
  fc.string({ unit: 'grapheme' }),
  fc.constantFrom('=HYPERLINK("http://x","y")', '-2+3+cmd|\' /C calc\'!A0', '@SUM(1,2)', '+1', '-', '=', "'", "'=1", '\t=1', '\r=1'),
);

test('any string: its CSV field is never a formula and shows exactly that string', () => {
  fc.assert(
    fc.property(hostile, hostile, (a, b) => {
      const line = [a, b].map(csvField).join(',');
      const cells = parseRecord(line);
      assert.equal(cells.length, 2);
      for (const [cell, s] of [[cells[0], a], [cells[1], b]] as const) {
        assert.ok(!isFormula(cell), `${JSON.stringify(s)} became ${JSON.stringify(cell)}, a formula`);
        assert.equal(shown(cell), s);
      }
    }),
    { numRuns: 3000 },
  );
});

test('numbers stay numbers: any double as JavaScript prints it is written as it is, negative ones too', () => {
  fc.assert(
    fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (v) => {
      const text = String(v);
      assert.equal(csvField(text), text);
      assert.ok(Number(parseRecord(csvField(text))[0]) === v, text);
    }),
  );
  for (const n of ['-0.5', '-1e-7', '+3', '-0', '1E+20', '.5', '-12.']) assert.equal(csvField(n), n);
});

test('OWASP examples are prefixed with a quote and quoted; plain text is untouched', () => {
  assert.equal(csvField('=1+1'), `"'=1+1"`);
  assert.equal(csvField('@SUM(A1:A2)'), `"'@SUM(A1:A2)"`);
  assert.equal(csvField('-2+3+cmd|\' /C calc\'!A0'), `"'-2+3+cmd|' /C calc'!A0"`);
  assert.equal(csvField('\t=1'), `"'\t=1"`);
  assert.equal(csvField('-Infinity'), `"'-Infinity"`, 'not a number a spreadsheet knows: text, shown as written');
  assert.equal(neutralizeCell('train/loss'), 'train/loss');
  assert.equal(csvField('a,b'), '"a,b"');
});

test('a chart CSV with a run and a metric named as formulas: header cells neutralised, values still numbers', () => {
  const a = new Series('=cmd');
  a.push(1, -0.5, Number.NaN);
  a.push(2, 0.25, Number.NaN);
  const b = new Series('=cmd');
  b.push(1, -1.5, Number.NaN);
  const text = seriesCsv('step', '=cmd|calc', [{ run: '@evil', series: a }, { run: 'ok', series: b }]);
  const rows = text.trimEnd().split('\r\n').map(parseRecord);
  assert.deepEqual(rows[0], ['step', "'@evil - =cmd|calc", 'ok - =cmd|calc']);
  assert.deepEqual(rows.slice(1), [['1', '-0.5', '-1.5'], ['2', '0.25', '']]);
  const one = seriesCsv('step', '+x', [{ run: 'r', series: b }]).split('\r\n')[0];
  assert.equal(one, `step,"'+x"`);
  for (const row of rows) for (const cell of row) assert.ok(!isFormula(cell), cell);
  assert.equal(cellsCsv([['=a', '-1']]), `"'=a",-1\r\n`);
});
