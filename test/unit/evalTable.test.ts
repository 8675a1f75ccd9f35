/** A run's evals as a step × metric table, and that table as CSV and Markdown. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { buildEvalTable, evalTableCsv, evalTableMarkdown, latestValues } from '../../src/core/eval/table';
import type { EvalRecord } from '../../src/core/eval/types';

let n = 0;
/** An eval record with what a test cares about; the rest filled in. */
function record(over: Partial<EvalRecord> & Pick<EvalRecord, 'step'>): EvalRecord {
  const id = over.id ?? `e${++n}`;
  return {
    id,
    profile: 'acceptance',
    checkpointPath: `/w/checkpoints/step_${over.step}`,
    startedAt: Date.UTC(2026, 0, 1, 12, 0, n),
    state: 'passed',
    exitCode: 0,
    results: [],
    resultsRecorded: true,
    stopped: false,
    logBytes: 10,
    dir: `/w/.remote-runs/evals/${id}`,
    meta: {} as EvalRecord['meta'],
    ...over,
  };
}

/** A minimal RFC 4180 reader, to check what evalTableCsv writes reads back the same. */
function readCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let i = 0;
  let quoted = false;
  while (i < text.length) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), (i += 2);
      else if (c === '"') (quoted = false), i++;
      else (field += c), i++;
    } else if (c === '"') (quoted = true), i++;
    else if (c === ',') row.push(field), (field = ''), i++;
    else if (c === '\r' && text[i + 1] === '\n') row.push(field), rows.push(row), (row = []), (field = ''), (i += 2);
    else (field += c), i++;
  }
  assert.equal(field, '', 'the text ends with a line end');
  return rows;
}

describe('latestValues', () => {
  test('a later result line wins for a metric; metrics seen only earlier stay', () => {
    assert.deepEqual(latestValues([{ a: 1, b: 2 }, { a: 3 }]), { a: 3, b: 2 });
    assert.deepEqual(latestValues([]), {});
  });
});

describe('buildEvalTable', () => {
  test('one row per step and profile, sorted by step; metric columns in order of appearance', () => {
    const t = buildEvalTable([
      record({ step: 2000, results: [{ acceptance_length: 6.4, tokens_per_s: 812 }] }),
      record({ step: 1000, results: [{ acceptance_length: 5.9 }] }),
      record({ step: 1000, profile: 'ppl', results: [{ perplexity: 9.1 }] }),
    ]);
    assert.deepEqual(t.metrics, ['acceptance_length', 'perplexity', 'tokens_per_s']);
    assert.deepEqual(t.rows.map((r) => [r.step, r.profile, r.values]), [
      [1000, 'acceptance', { acceptance_length: 5.9 }],
      [1000, 'ppl', { perplexity: 9.1 }],
      [2000, 'acceptance', { acceptance_length: 6.4, tokens_per_s: 812 }],
    ]);
    assert.equal(t.rows[0]!.checkpoint, 'step_1000');
  });

  test('a re-run replaces the older value; a running re-run does not hide a finished result', () => {
    const old = record({ step: 500, results: [{ acc: 0.5 }], startedAt: 1000 });
    const newer = record({ step: 500, results: [{ acc: 0.7 }], startedAt: 2000 });
    const running = record({ step: 500, state: 'running', results: [], resultsRecorded: false, startedAt: 3000 });
    const t = buildEvalTable([old, running, newer]);
    assert.equal(t.rows.length, 1);
    assert.deepEqual(t.rows[0]!.values, { acc: 0.7 });
    assert.equal(t.rows[0]!.id, newer.id);
    assert.equal(t.rows[0]!.others, 2);
    assert.equal(buildEvalTable([old, running, newer], { all: true }).rows.length, 3);
  });

  test('an eval without results is still a row (its state says why), with no values', () => {
    const t = buildEvalTable([record({ step: 7, state: 'failed', exitCode: 3 })]);
    assert.deepEqual(t.metrics, []);
    assert.equal(t.rows[0]!.state, 'failed');
  });
});

describe('CSV', () => {
  test('header, one line per row, empty cells for metrics not measured, CRLF line ends', () => {
    const t = buildEvalTable([
      record({ step: 1000, results: [{ a: 1.5 }], startedAt: Date.UTC(2026, 0, 2, 3, 4, 5) }),
      record({ step: 2000, profile: 'other', results: [{ b: 2 }], startedAt: Date.UTC(2026, 0, 2, 3, 4, 6) }),
    ]);
    assert.equal(
      evalTableCsv(t),
      'step,checkpoint,profile,state,started,a,b\r\n' +
        '1000,step_1000,acceptance,passed,2026-01-02T03:04:05.000Z,1.5,\r\n' +
        '2000,step_2000,other,passed,2026-01-02T03:04:06.000Z,,2\r\n',
    );
  });

  test('any profile and metric names read back exactly as a spreadsheet shows them (quotes, commas, line breaks, formula-like names)', () => {
    fc.assert(
      fc.property(fc.string(), fc.string({ minLength: 1 }), fc.double({ noNaN: true, noDefaultInfinity: true }), (profile, metric, value) => {
        const t = buildEvalTable([record({ step: 1, profile, results: [{ [metric]: value }] })]);
        // A spreadsheet hides one leading `'` (the text marker neutralizeCell puts before a formula-like cell).
        const rows = readCsv(evalTableCsv(t)).map((r) => r.map((f) => (f.startsWith("'") ? f.slice(1) : f)));
        assert.deepEqual(rows[0], ['step', 'checkpoint', 'profile', 'state', 'started', metric]);
        assert.equal(rows[1]![2], profile);
        assert.ok(Number(rows[1]![5]) === value, `${rows[1]![5]} reads back as ${value}`); // === : -0 prints as 0
      }),
    );
  });
});

describe('Markdown', () => {
  test('a table with an alignment row; numbers right-aligned', () => {
    const t = buildEvalTable([record({ step: 1000, results: [{ acceptance_length: 6.4 }], startedAt: Date.UTC(2026, 0, 2) })]);
    assert.equal(
      evalTableMarkdown(t),
      '| step | checkpoint | profile | state | started | acceptance_length |\n' +
        '| ---: | --- | --- | --- | --- | ---: |\n' +
        '| 1000 | step_1000 | acceptance | passed | 2026-01-02T00:00:00.000Z | 6.4 |\n',
    );
  });

  test('pipes, backslashes, line breaks and markup in names cannot break the table', () => {
    const t = buildEvalTable([record({ step: 1, profile: 'a|b\\c\nd <img src=x>', results: [{ 'm|1': 2 }] })]);
    const lines = evalTableMarkdown(t).trimEnd().split('\n');
    assert.equal(lines.length, 3, 'still three lines');
    for (const l of lines) assert.equal(l.replace(/\\\\/g, '').replace(/\\\|/g, '').split('|').length, 8, `seven cells in ${l}`);
    assert.match(lines[2]!, /a\\\|b\\\\c d &lt;img src=x>/);
    assert.match(lines[0]!, /m\\\|1/);
  });
});
