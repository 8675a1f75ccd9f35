/** The speculative-decoding card (core/eval/spec/card.ts), its spec.json record and the references file's card rows. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  CHECKLIST_KEYS,
  buildSpecCard,
  checkpointRow,
  checkpointRowsFromFile,
  checkpointRowsFromRecords,
  compareRows,
  referenceRow,
  settingsChecklist,
  type SpecReferenceRow,
} from '../../src/core/eval/spec/card';
import { formatSpecRecord, parseSpecRecord } from '../../src/core/eval/spec/record';
import { SPEC_SETTINGS } from '../../src/core/eval/spec/settings';
import type { SpecResult, SpecSettings } from '../../src/core/eval/spec/types';
import { toEvalRecords, type RawEval } from '../../src/core/eval/records';
import { parseReferences, serializeReferences } from '../../src/core/metrics/references';
import { formatCard } from '../../src/cli/card';
import { readSpecOutput } from '../../src/core/eval/spec/detect';
import { specResult } from '../builders/specResult';

const RUN = 'gpu1/host/dflash';

const result = specResult;

const paper: SpecReferenceRow = { run: RUN, kind: 'paper', label: 'DFlash Table 2', tau: 3.5, tauDefinition: 'one-plus-accepted-per-draft', pk: [0.85, 0.7, 0.5], settings: { temperature: 1, maxTokens: 256, model: 'Qwen3-8B' } };
const reference: SpecReferenceRow = { run: RUN, kind: 'reference', label: 'EAGLE3 drafter', tau: 2.9, tauDefinition: 'one-plus-accepted-per-draft', settings: { temperature: 0, maxTokens: 256, model: 'Qwen3-8B' } };

test('the card: checkpoint rows, then the paper and reference rows of this run only; τ and p_k against the paper; temperature flagged', () => {
  const other = { ...paper, run: 'gpu1/host/another', label: 'not this run' };
  const card = buildSpecCard({
    run: RUN,
    checkpoints: [checkpointRow(result(), { step: 1000, label: 'step_1000' }), checkpointRow(result({ tau: 3.4, pk: [0.84, 0.66] }), { step: 2000, label: 'step_2000' })],
    references: [other, paper, reference],
  });
  assert.deepEqual(card.rows.map((r) => [r.kind, r.label]), [['checkpoint', 'step_1000'], ['checkpoint', 'step_2000'], ['paper', 'DFlash Table 2'], ['reference', 'EAGLE3 drafter']]);
  assert.equal(card.paper, 2);
  assert.equal(card.comparisons[2], undefined, 'the paper row is not compared with itself');
  const c0 = card.comparisons[0]!;
  assert.equal(c0.tau.kind, 'compared');
  assert.ok(c0.tau.kind === 'compared' && Math.abs(c0.tau.abs - (3.2 - 3.5)) < 1e-12 && Math.abs(c0.tau.rel! - (3.2 - 3.5) / 3.5) < 1e-12);
  assert.ok(Math.abs(c0.pk[0]!.abs - (0.8 - 0.85)) < 1e-12);
  // Row 2 has K = 2: p_3 is not compared.
  assert.equal(card.comparisons[1]!.pk.length, 3);
  assert.equal(card.comparisons[1]!.pk[2], undefined);
  assert.ok(c0.settingsDiffer.includes('temperature'), 'T=0 against the paper at T=1 is said');
  assert.ok(c0.settingsUnknown.includes('concurrency'), 'the paper does not say its concurrency');
  const t = card.checklist.find((c) => c.key === 'temperature')!;
  assert.deepEqual(t.values, [0, 0, 1, 0]);
  assert.equal(t.status, 'differs');
  assert.equal(t.flagged, true);
  assert.equal(card.checklist.find((c) => c.key === 'maxTokens')!.status, 'same');
  assert.equal(card.checklist.find((c) => c.key === 'thinking')!.status, 'unrecorded');
  assert.equal(card.checklist.find((c) => c.key === 'thinking')!.flagged, false);
  const text = formatCard(card);
  assert.match(text, /^!\s+temperature\s+0\s+0\s+1\s+0$/m);
  assert.match(text, /step_1000\s+1000\s+3\.2\s+−0\.3 \(−8\.6%\) ! temperature differs/);
  assert.match(text, /1: 1 \+ accepted draft tokens \/ verify steps/);
});

test('τ of another definition: recomputed from the row\'s counts with the definitions\' functions, or said not comparable', () => {
  const measured = checkpointRow(result({ tauDefinition: 'completion-per-verify', tau: 3.3 }), { step: 1 });
  const c = compareRows(measured, referenceRow(paper));
  assert.equal(c.tau.kind, 'compared');
  assert.ok(c.tau.kind === 'compared' && c.tau.row === 1 + 220 / 100 && c.tau.converted?.includes('220 accepted / 100 verify steps'));
  const noCounts = checkpointRow(result({ tauDefinition: 'completion-per-verify', tau: 3.3, counts: undefined }), { step: 1 });
  const n = compareRows(noCounts, referenceRow(paper));
  assert.equal(n.tau.kind, 'not-comparable');
  assert.ok(n.tau.kind === 'not-comparable' && /completion tokens \/ verify steps.*no counts/.test(n.tau.why));
  const eagle = compareRows(noCounts, referenceRow({ ...paper, tauDefinition: 'eagle-new-tokens-per-idx' }));
  assert.equal(eagle.tau.kind, 'not-comparable');
  // Without a paper row nothing is compared, and the card says so.
  const alone = buildSpecCard({ run: RUN, checkpoints: [measured], references: [reference] });
  assert.equal(alone.paper, undefined);
  assert.deepEqual(alone.comparisons, [undefined, undefined]);
  assert.match(alone.notes.join('\n'), /no paper row/);
});

const settingsArb: fc.Arbitrary<SpecSettings> = fc.record(
  {
    temperature: fc.constantFrom(0, 0.6, 1),
    maxTokens: fc.constantFrom(128, 256, 2048),
    thinking: fc.boolean(),
    chatTemplate: fc.constantFrom('chatml', 'llama3'),
    concurrency: fc.constantFrom(1, 4),
    method: fc.constantFrom('eagle3', 'dflash'),
    numSteps: fc.constantFrom(3, 5),
    topk: fc.constantFrom(1, 4),
    numDraftTokens: fc.constantFrom(4, 8),
    numSpeculativeTokens: fc.constantFrom(3, 7),
    blockSize: fc.constantFrom(8, 16),
    model: fc.constantFrom('Qwen3-8B', 'Llama-3.1-8B'),
    benchmark: fc.constantFrom('mtbench', 'gsm8k'),
  },
  { requiredKeys: [] },
);

test('property: any two rows: every setting that differs or is known on one side only is flagged, and nothing else; identical rows flag nothing', () => {
  fc.assert(
    fc.property(settingsArb, settingsArb, (a, b) => {
      const rows = [checkpointRow(result({ settings: a }), { step: 1 }), referenceRow({ ...paper, settings: b })];
      const checklist = settingsChecklist(rows);
      assert.deepEqual(checklist.map((c) => c.key), [...CHECKLIST_KEYS]);
      for (const c of checklist) {
        const x = a[c.key];
        const y = b[c.key];
        const shouldFlag = (x === undefined) !== (y === undefined) || (x !== undefined && y !== undefined && x !== y);
        assert.equal(c.flagged, shouldFlag, `${c.key}: ${x} / ${y}`);
        if (x !== undefined && y !== undefined && x !== y) assert.equal(c.status, 'differs');
      }
      const cmp = compareRows(rows[0], rows[1]);
      assert.deepEqual([...cmp.settingsDiffer, ...cmp.settingsUnknown].sort(), checklist.filter((c) => c.flagged).map((c) => c.key).sort());
      assert.equal(settingsChecklist([rows[0], checkpointRow(result({ settings: { ...a } }), { step: 2 })]).filter((c) => c.flagged).length, 0);
    }),
  );
});

test('checkpoint rows from eval records: the newest passed record with spec.json per checkpoint and profile, in step order', () => {
  const meta = (id: string, step: number, profile = 'drafter') => ({ id, profile, checkpoint: `/runs/d/step_${step}`, step, startedAt: id.slice(0, 4) === '2026' ? '2026-01-02T00:00:00Z' : '2025-01-01T00:00:00Z', command: 'speculative-server …', cwd: '', run: { host: 'gpu1', target: 'host', name: 'd', path: '/runs/d' }, kind: 'speculative-server' });
  const raw = (id: string, step: number, tau: number | undefined, status = '0', profile = 'drafter'): RawEval => ({
    id,
    files: {
      meta: Buffer.from(JSON.stringify(meta(id, step, profile))),
      status: Buffer.from(status),
      results: Buffer.from(JSON.stringify({ tau: tau ?? 1 }) + '\n'),
      ...(tau !== undefined ? { spec: Buffer.from(formatSpecRecord({ version: 1, engine: 'vllm', result: result({ tau }) })) } : {}),
    },
    logBytes: 10,
    alive: false,
  });
  const records = toEvalRecords(
    [
      raw('2025-old-2000', 2000, 2.0),
      raw('2026-new-2000', 2000, 2.5),
      raw('2026-new-1000', 1000, 2.2),
      raw('2026-failed-3000', 3000, 9, '1'),
      raw('2026-cmd-4000', 4000, undefined),
      raw('2026-other-1000', 1000, 2.1, '0', 'drafter-k7'),
    ],
    (id) => `/runs/d/.remote-runs/evals/${id}`,
  );
  assert.equal(records.find((r) => r.id === '2026-new-2000')!.spec!.engine, 'vllm');
  const rows = checkpointRowsFromRecords(records);
  assert.deepEqual(rows.map((r) => [r.step, r.profile, r.tau, r.evalId]), [
    [1000, 'drafter', 2.2, '2026-new-1000'],
    [1000, 'drafter-k7', 2.1, '2026-other-1000'],
    [2000, 'drafter', 2.5, '2026-new-2000'],
  ]);
  assert.equal(rows[0].label, 'step_1000');
});

test('spec.json: what is written reads back; a broken or foreign one is refused naming the field, and the record stays listed', () => {
  const r = result();
  const back = parseSpecRecord(formatSpecRecord({ version: 1, engine: 'sglang', model: 'm', server: 'http://x:1', source: 'sglang-spec-details', result: r }));
  assert.ok('record' in back);
  assert.deepEqual(back.record.result, r);
  assert.equal(back.record.engine, 'sglang');
  const bad = (o: unknown) => parseSpecRecord(JSON.stringify(o));
  assert.match(String((parseSpecRecord('{oops') as { problems: string[] }).problems), /not JSON/);
  assert.match(String((bad({ version: 9, result: r }) as { problems: string[] }).problems), /version 9/);
  assert.match(String((bad({ version: 1, result: { ...r, tauDefinition: 'mine' } }) as { problems: string[] }).problems), /tauDefinition "mine"/);
  assert.match(String((bad({ version: 1, result: { ...r, settings: { temp: 0 } } }) as { problems: string[] }).problems), /settings\.temp: not a setting/);
  assert.match(String((bad({ version: 1, result: { ...r, pk: ['x'] } }) as { problems: string[] }).problems), /pk must be a list of numbers/);
  const [rec] = toEvalRecords([{ id: 'e1', files: { meta: Buffer.from(JSON.stringify({ id: 'e1', profile: 'p', checkpoint: '/c', step: 1, startedAt: '2026-01-01T00:00:00Z', command: 'c', cwd: '', run: {} })), status: Buffer.from('0'), spec: Buffer.from('{') }, logBytes: 0, alive: false }], (id) => id);
  assert.equal(rec.spec, undefined);
  assert.match(rec.specProblems!.join(), /not JSON/);
});

test('references file: a version 1 file still parses (no card rows); card rows round-trip as version 2; lines and rows survive each other', () => {
  const v1 = JSON.stringify({ version: 1, lines: [{ metric: 'loss', value: 1.2, label: 'paper', source: 'Table 2' }] });
  const old = parseReferences(v1);
  assert.equal(old.lines.length, 1);
  assert.deepEqual(old.specRows, []);
  assert.deepEqual(old.problems, []);
  assert.equal(JSON.parse(serializeReferences(old.lines)).version, 1, 'no card row: still written as version 1');
  const text = serializeReferences(old.lines, [paper, reference]);
  assert.equal(JSON.parse(text).version, 2);
  const back = parseReferences(text);
  assert.deepEqual(back.specRows, [paper, reference]);
  assert.deepEqual(back.lines, old.lines);
  assert.deepEqual(back.problems, []);
  // A file of card rows alone needs no "lines".
  assert.deepEqual(parseReferences(JSON.stringify({ version: 2, specRows: [paper] })), { lines: [], specRows: [paper], problems: [] });
});

test('references file: each bad card row is left out and every reason is named', () => {
  const rows = [
    paper,
    { ...paper, tau: 0.5 },
    { ...paper, tauDefinition: 'tau' },
    { ...paper, kind: 'baseline' },
    { ...paper, settings: { temp: 1 } },
    { ...paper, settings: { temperature: 'zero' } },
    { ...paper, pk: [0.5, 0.7] },
    { ...paper, run: '' },
    'paper 3.5',
  ];
  const parsed = parseReferences(JSON.stringify({ version: 2, lines: [], specRows: rows }));
  assert.deepEqual(parsed.specRows, [paper]);
  const p = parsed.problems.join('\n');
  assert.match(p, /specRows\[1\]: "tau" must be a number ≥ 1 .*add 1/);
  assert.match(p, /specRows\[2\]: "tauDefinition" must say how τ was computed, one of completion-per-verify, one-plus-accepted-per-draft/);
  assert.match(p, /specRows\[3\]: "kind" must be "paper" or "reference", got "baseline"/);
  assert.match(p, /specRows\[4\]\.settings\.temp: not a setting/);
  assert.match(p, /specRows\[5\]\.settings\.temperature: must be a number, got "zero"/);
  assert.match(p, /specRows\[6\]: "pk" must not rise with k/);
  assert.match(p, /specRows\[7\]: "run" must be the run's address/);
  assert.match(p, /specRows\[8\]: must be an object/);
  assert.match(parseReferences(JSON.stringify({ lines: [], specRows: {} })).problems.join(), /"specRows" must be a list/);
});

test('every checklist setting has a label and a type', () => {
  for (const k of CHECKLIST_KEYS) assert.ok(SPEC_SETTINGS[k].label.length > 0);
});

test('rows from a tool\'s output file (readSpecOutput): one per speculative result at the given step; the baseline and bad lines are notes; an unknown file throws with the reader\'s reason', () => {
  const file = path.join(__dirname, '..', 'fixtures', 'spec', 'sglang_bench_speculative.jsonl');
  const read = readSpecOutput(fs.readFileSync(file, 'utf8'), file);
  assert.equal(read.tool, 'sglang-bench-speculative');
  const spec = read.tool !== undefined ? read.results.filter((r) => r.speculative) : [];
  const { rows } = checkpointRowsFromFile(read, { step: 20000, file });
  assert.equal(rows.length, spec.length);
  assert.ok(rows.length > 0);
  assert.ok(rows.every((r) => r.step === 20000 && r.kind === 'checkpoint' && r.label.startsWith('sglang_bench_speculative.jsonl: ')));
  assert.deepEqual(rows.map((r) => r.tau), spec.map((r) => r.tau));
  assert.deepEqual(rows.map((r) => r.settings), spec.map((r) => r.settings));
  const partial = path.join(__dirname, '..', 'fixtures', 'spec', 'sglang_bench_speculative.partial.jsonl');
  const cut = checkpointRowsFromFile(readSpecOutput(fs.readFileSync(partial, 'utf8'), partial), { step: 1, file: partial });
  assert.match(cut.notes.join('\n'), /not finished yet|still being written/);
  assert.throws(() => checkpointRowsFromFile(readSpecOutput('hello\nworld\n'), { step: 1, file: 'notes.txt' }), /notes\.txt: not a result file of a known tool: .*first lines: hello \| world/);
});
