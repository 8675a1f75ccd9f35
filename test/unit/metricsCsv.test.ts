/** CSV metrics parsing: RFC 4180 quoting, header-driven x/time columns, empty cells and bad rows. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createParser, type RunMetrics } from '../../src/core/metrics';

const enc = new TextEncoder();

function parseCsv(text: string, split?: number, end = true): RunMetrics {
  const p = createParser('csv');
  const bytes = enc.encode(text);
  if (split !== undefined) {
    p.push(bytes.subarray(0, split));
    p.push(bytes.subarray(split));
  } else p.push(bytes);
  if (end) p.end();
  return p.metrics;
}

function points(m: RunMetrics, key: string): Array<[number, number]> {
  const s = m.get(key);
  assert.ok(s, `series ${key} exists (have ${JSON.stringify(m.keys())})`);
  return [...s.x].map((x, i) => [x, s.y[i]]);
}

test('header names pick the x and time columns; other numeric columns are metrics; empty cells are skipped', () => {
  const m = parseCsv('epoch,step,train_loss,val_loss,timestamp\n0,10,2.5,,1700000000\n0,20,2.0,2.2,1700000010\n');
  assert.deepEqual(m.keys(), ['epoch', 'train_loss', 'val_loss']);
  assert.deepEqual(points(m, 'train_loss'), [[10, 2.5], [20, 2.0]]);
  assert.deepEqual(points(m, 'val_loss'), [[20, 2.2]]);
  assert.deepEqual([...m.get('train_loss')!.time!], [1700000000000, 1700000010000]);
  assert.equal(m.badLines + m.badValues, 0);
});

test('quoted fields with commas, doubled quotes and newlines (RFC 4180), CRLF rows', () => {
  const text = 'step,"loss, smoothed","say ""hi""",note\r\n1,"0.5","1","line one\r\nline two, still the note"\r\n2,0.25,2,plain\r\n';
  const m = parseCsv(text);
  assert.deepEqual(m.keys(), ['loss, smoothed', 'say "hi"']);
  assert.deepEqual(points(m, 'loss, smoothed'), [[1, 0.5], [2, 0.25]]);
  assert.deepEqual(points(m, 'say "hi"'), [[1, 1], [2, 2]]);
  assert.equal(m.has('note'), false);
  assert.equal(m.badLines + m.badValues, 0);
  // The same at every chunk boundary.
  const expected = JSON.stringify(m.keys().map((k) => points(m, k)));
  for (let i = 0; i <= text.length; i++) {
    const mi = parseCsv(text, i);
    assert.equal(JSON.stringify(mi.keys().map((k) => points(mi, k))), expected, `split at ${i}`);
  }
});

test('rows with the wrong field count are counted with their line; nan/inf cells skip one value; a repeated header is silent', () => {
  const text = [
    'step,loss,acc',
    '1,1.0,0.1',
    '2,0.9', // short row: line 3
    'step,loss,acc', // a resumed run appended the header again
    '3,nan,0.3',
    '4,0.7,0.4,',
    '5,0.6,0.5,extra',
    '',
  ].join('\n');
  const m = parseCsv(text);
  assert.deepEqual(points(m, 'loss'), [[1, 1.0], [4, 0.7]]);
  assert.deepEqual(points(m, 'acc'), [[1, 0.1], [3, 0.3], [4, 0.4]]);
  assert.equal(m.badLines, 2);
  assert.deepEqual(m.firstBadLine, { line: 3, byteOffset: 24, excerpt: '2,0.9', reason: '2 fields where the header has 3' });
  assert.equal(m.badValues, 1);
  assert.equal(m.firstBadValue?.key, 'loss');
  assert.equal(m.firstBadValue?.line, 5);
});

test('line numbers count physical lines, even inside quoted newlines; x falls back to them without a step column', () => {
  const m = parseCsv('note,loss\n"a\nb",1\nc,2\n');
  assert.deepEqual(points(m, 'loss'), [[2, 1], [4, 2]]);
});

test('an unnamed index column (pandas) is not a metric; a BOM does not hide the first column name', () => {
  const m = parseCsv('\ufeff,step,loss\n0,100,1.5\n1,200,1.25\n');
  assert.deepEqual(m.keys(), ['loss']);
  assert.deepEqual(points(m, 'loss'), [[100, 1.5], [200, 1.25]]);
});

test('a partial last row waits for its newline; at end() it is taken only when complete', () => {
  const p = createParser('csv');
  p.push(enc.encode('step,loss\n1,0.5\n2,0.'));
  assert.equal(p.metrics.get('loss')!.length, 1);
  assert.equal(p.pendingBytes, 4);
  p.push(enc.encode('25\n'));
  assert.deepEqual(points(p.metrics, 'loss'), [[1, 0.5], [2, 0.25]]);

  const cut = parseCsv('step,loss,acc\n1,0.5,0.1\n2,0.4');
  assert.deepEqual(points(cut, 'loss'), [[1, 0.5]]);
  assert.equal(cut.badLines, 0, 'a short unterminated last row is mid-write, not bad');
  const openQuote = parseCsv('step,note,loss\n1,"unfinished');
  assert.equal(openQuote.badLines, 0);
  const complete = parseCsv('step,loss\n1,0.5\n2,0.25');
  assert.deepEqual(points(complete, 'loss'), [[1, 0.5], [2, 0.25]]);
});

test('strict numbers: hex, blanks and words are not numbers', () => {
  const m = parseCsv('step,a,b\n1,1,0x10\n2, 2 ,abc\n');
  assert.deepEqual(points(m, 'a'), [[1, 1], [2, 2]]);
  assert.equal(m.has('b'), false);
  assert.equal(m.badValues, 0, 'a column never numeric is just not a metric');
});
