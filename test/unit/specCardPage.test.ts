/**
 * The speculative-decoding card in the editor: its page (specCardHtml.ts: CSP, every row kind, hostile labels,
 * differences and the checklist marked, empty states), the messages its page posts (specCardMessages.ts), a row
 * entered in its form validated by the references file's one validator (references.ts specRowFromForm), the rows'
 * ids, and the shared collection with its empty cases (card.ts specCardOf, cardEmptyReason).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildSpecCard, cardEmptyReason, checkpointRow, enteredRowOrder, specCardOf, type SpecReferenceRow } from '../../src/core/eval/spec/card';
import { formatSpecRecord } from '../../src/core/eval/spec/record';
import { SPEC_SETTING_KEYS } from '../../src/core/eval/spec/settings';
import type { SpecResult } from '../../src/core/eval/spec/types';
import { toEvalRecords, type RawEval } from '../../src/core/eval/records';
import { parseReferences, serializeReferences, specRowFromForm, specRowIds, withSpecRowRemoved } from '../../src/core/metrics/references';
import { specCardHtml, specCardSectionHtml, type SpecCardState } from '../../src/extension/eval/specCardHtml';
import { parseSpecCardFromWebview, SPEC_CARD_FORM_INPUTS } from '../../src/extension/eval/specCardMessages';
import { specResult } from '../builders/specResult';

const RUN = 'gpu1/host/dflash';
const parts = { cspSource: 'vscode-webview://src', styleUri: 'vscode-webview://src/media/specCard.css' };

/** The builder's result as the page tests read it: a shorter label, four settings, none of them sourced, no notes. */
function result(over: Partial<SpecResult> = {}): SpecResult {
  return specResult({ label: 'target T=0', settings: { temperature: 0, maxTokens: 256, model: 'Qwen3-8B', numSpeculativeTokens: 3 }, settingSources: {}, notes: [], ...over });
}

const HOSTILE = '"><img src=x onerror=alert(1)>\u202egnp.exe';
const paper: SpecReferenceRow = { run: RUN, kind: 'paper', label: 'DFlash Table 2', tau: 3.5, tauDefinition: 'one-plus-accepted-per-draft', pk: [0.85, 0.7, 0.5], settings: { temperature: 1, maxTokens: 256, model: 'Qwen3-8B' }, source: 'arXiv Table 2' };
const reference: SpecReferenceRow = { run: RUN, kind: 'reference', label: HOSTILE, tau: 2.9, tauDefinition: 'completion-per-verify', settings: { temperature: 0, maxTokens: 256 } };

function stateOf(references: SpecReferenceRow[], over: Partial<SpecCardState> = {}): SpecCardState {
  const card = buildSpecCard({
    run: RUN,
    checkpoints: [
      checkpointRow(result(), { step: 1000, label: 'step_1000', profile: 'drafter' }),
      // Measured under SGLang's definition, with the counts to recompute it the paper's way.
      checkpointRow(result({ tau: 3.4, tauDefinition: 'completion-per-verify' }), { step: 2000, label: 'step_2000', profile: 'drafter' }),
    ],
    references,
  });
  const ids = specRowIds(references);
  const order = enteredRowOrder(RUN, references);
  const first = card.rows.length - order.length;
  return { card, rowIds: card.rows.map((_, i) => (i < first ? undefined : ids[order[i - first]])), listing: false, keptIn: '/ws/.vscode/remote-runs.references.json', ...over };
}

/** The `<tr …>` of the row labelled `label` (its data-label as the page escapes it). */
function rowTag(html: string, kind: string): string[] {
  return [...html.matchAll(new RegExp(`<tr data-kind="${kind}"[^>]*>[\\s\\S]*?</tr>`, 'g'))].map((m) => m[0]);
}

test('CSP: nothing by default, the one script by this nonce, styles from the extension; no inline handler or style', () => {
  const html = specCardHtml({ ...parts, run: RUN, state: stateOf([paper]), nonce: 'abc123' });
  assert.ok(html.includes(`content="default-src &#39;none&#39;; script-src &#39;nonce-abc123&#39;; style-src vscode-webview://src;`));
  assert.equal((html.match(/<script/g) ?? []).length, 1);
  assert.match(html, /<script nonce="abc123">/);
  assert.match(html, /<link rel="stylesheet" href="vscode-webview:\/\/src\/media\/specCard.css">/);
  assert.doesNotMatch(html, /unsafe-|style="|<style|\son[a-z]+=/);
});

test('every row kind: two checkpoint rows, the paper row, a reference row; each with data-label and its τ cell with the definition', () => {
  const html = specCardSectionHtml(stateOf([paper, reference]));
  assert.match(html, /<table class="spec-card"/);
  const checkpoints = rowTag(html, 'checkpoint');
  assert.equal(checkpoints.length, 2);
  assert.match(checkpoints[0], /data-label="step_1000"/);
  assert.match(checkpoints[0], /<td class="num step">1000<\/td>/);
  assert.match(checkpoints[0], /<td class="num tau" data-definition="one-plus-accepted-per-draft" title="τ: 1 \+ accepted draft tokens \/ verify steps[^"]*">3\.2<\/td>/);
  assert.match(checkpoints[0], /<td class="profile">drafter<\/td>/);
  assert.match(checkpoints[0], /<td class="num acceptance">0\.55<\/td><td class="num tps">120<\/td>/);
  // p_k with the difference to the paper's.
  assert.match(checkpoints[0], /<td class="num pk">0\.8 <span class="diff neg">\(−0\.05\)<\/span><\/td>/);
  const [p] = rowTag(html, 'paper');
  assert.match(p, /data-label="DFlash Table 2"/);
  assert.match(p, /<td class="num tau"[^>]*>3\.5<\/td>/);
  assert.match(p, /the paper row/);
  assert.match(p, /<span class="source">arXiv Table 2<\/span>/);
  const [r] = rowTag(html, 'reference');
  assert.match(r, /<td class="num tau" data-definition="completion-per-verify"[^>]*>2\.9<\/td>/);
  // Entered rows can be removed (by their id); checkpoint rows cannot.
  const ids = specRowIds([paper, reference]);
  assert.match(p, new RegExp(`<button type="button" class="remove-row" data-id="${ids[0]}"`));
  assert.match(r, new RegExp(`<button type="button" class="remove-row" data-id="${ids[1]}"`));
  assert.ok(checkpoints.every((c) => !c.includes('remove-row')));
  // The definitions in use are listed.
  assert.match(html, /<ol class="tau-definitions"[^>]*><li data-definition="one-plus-accepted-per-draft">.*<li data-definition="completion-per-verify">/);
});

test('differences against the paper: τ absolute and relative; recomputed under its definition is said; one that cannot be is said why; settings that differ named', () => {
  const html = specCardSectionHtml(stateOf([paper, reference]));
  const [c1, c2] = rowTag(html, 'checkpoint');
  assert.match(c1, /<td class="vs differs"><span class="tau-diff neg">−0\.3 \(−8\.6%\)<\/span><span class="settings-differ">! temperature differs<\/span>/);
  // step_2000 measured completion/verify (3.4); recomputed as 1 + 220/100 = 3.2 under the paper's definition.
  assert.match(c2, /<span class="tau-diff neg">−0\.3 \(−8\.6%\)<\/span><span class="converted" title="recomputed from this row&#39;s counts as 1 \+ 220 accepted \/ 100 verify steps">\* recomputed/);
  const [r] = rowTag(html, 'reference');
  assert.match(r, /<span class="not-comparable">τ not compared: τ here is completion tokens \/ verify steps .*and this row holds no counts to compute it the paper&#39;s way<\/span>/);
  // Without a paper row there is no comparison column.
  const noPaper = specCardSectionHtml(stateOf([reference]));
  assert.doesNotMatch(noPaper, /τ vs paper|class="vs/);
  assert.match(noPaper, /no paper row is entered for gpu1\/host\/dflash: nothing to compare against/);
});

test('the checklist: one item per setting; temperature (0 against 1) differs, model unknown on a row, thinking said by none', () => {
  const html = specCardSectionHtml(stateOf([paper, reference]));
  const item = (key: string) => new RegExp(`<li data-setting="${key}" class="([^"]*)">([\\s\\S]*?)</li>`).exec(html);
  const t = item('temperature')!;
  assert.equal(t[1], 'differs flagged');
  assert.match(t[2], /<span class="mark">!<\/span><span class="setting">temperature<\/span> <span class="status">differs<\/span>/);
  assert.match(t[2], /step_1000: 0<\/span>.*paper: DFlash Table 2: 1<\/span>/);
  assert.equal(item('maxTokens')![1], 'same');
  assert.equal(item('model')![1], 'unknown flagged');
  assert.match(item('model')![2], /unsaid/);
  assert.equal(item('thinking')![1], 'unrecorded');
});

test('hostile labels and sources are text: no markup, no bidi override, in cells and attributes alike', () => {
  const hostilePaper = { ...paper, label: HOSTILE, source: '<script>alert(1)</script>' };
  const html = specCardHtml({ ...parts, run: 'h/host/<b>run</b>', state: stateOf([hostilePaper, reference]), nonce: 'n' });
  assert.doesNotMatch(html, /<img|<b>run|<script>alert/);
  assert.doesNotMatch(html, /[\u202a-\u202e]/);
  assert.ok(html.includes('data-label="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;\\u202egnp.exe"'), 'the label escaped in the attribute');
  assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
  assert.ok(html.includes('<h1>Speculative-decoding card of h/host/&lt;b&gt;run&lt;/b&gt;</h1>'));
});

test('empty states: listing; no checkpoint row and why; a file that cannot be written says so and its rows cannot be removed', () => {
  const listing = specCardSectionHtml({ ...stateOf([]), listing: true });
  assert.match(listing, /<p class="empty" data-empty="listing">Listing the evals of this run…<\/p>/);
  const empty = buildSpecCard({ run: RUN, checkpoints: [], references: [paper] });
  const why = 'No eval of gpu1/host/dflash yet: measure …';
  const html = specCardSectionHtml({ card: empty, rowIds: ['p1'], listing: false, emptyReason: why, keptIn: 'x' });
  assert.match(html, /<p class="empty" data-empty="no-checkpoint-row">No eval of gpu1\/host\/dflash yet: measure …<\/p>/);
  assert.equal(rowTag(html, 'paper').length, 1, 'the entered rows are shown all the same');
  const blocked = specCardSectionHtml({ ...stateOf([paper]), blocked: '.vscode/remote-runs.references.json holds what could not be read (lines[0]: "value" must be a finite number): fix or remove that first; nothing was written' });
  assert.match(blocked, /<p class="blocked" role="alert">Rows cannot be added or removed: .*lines\[0\]: &quot;value&quot; must be a finite number/);
  assert.match(rowTag(blocked, 'paper')[0], /class="remove-row"[^>]* disabled>/);
});

test('the form: buttons, every input by the name specRowFromForm reads (one per setting), the save button', () => {
  const html = specCardHtml({ ...parts, run: RUN, state: stateOf([]), nonce: 'n' });
  for (const id of ['add-paper', 'add-reference', 'save-row', 'refresh']) assert.match(html, new RegExp(`<button type="(button|submit)" id="${id}"`));
  const names = [...html.matchAll(/<(?:input|select) name="([^"]+)"/g)].map((m) => m[1]);
  assert.deepEqual([...names].sort(), [...SPEC_CARD_FORM_INPUTS].sort());
  assert.equal(SPEC_SETTING_KEYS.filter((k) => names.includes(`setting.${k}`)).length, SPEC_SETTING_KEYS.length);
  assert.match(html, /<select name="setting\.thinking"><option value="">not said<\/option><option value="true">yes<\/option><option value="false">no<\/option><\/select>/);
  assert.match(html, /<select name="tauDefinition"><option value="">choose…<\/option><option value="completion-per-verify">/);
});

test('messages from the page: known shapes only; unknown inputs dropped; an oversized or non-text input drops the message', () => {
  assert.deepEqual(parseSpecCardFromWebview({ type: 'ready' }), { type: 'ready' });
  assert.deepEqual(parseSpecCardFromWebview({ type: 'refresh', x: 1 }), { type: 'refresh' });
  assert.deepEqual(parseSpecCardFromWebview({ type: 'removeRow', id: 'r1abc-2' }), { type: 'removeRow', id: 'r1abc-2' });
  assert.equal(parseSpecCardFromWebview({ type: 'removeRow', id: '../x' }), undefined);
  assert.equal(parseSpecCardFromWebview({ type: 'removeRow' }), undefined);
  assert.deepEqual(parseSpecCardFromWebview({ type: 'saveRow', kind: 'paper', fields: { label: 'p', tau: '3', 'setting.temperature': '1', __proto__x: 'y', run: 'other/host/run' } }), {
    type: 'saveRow',
    kind: 'paper',
    fields: { label: 'p', tau: '3', 'setting.temperature': '1' },
  });
  assert.equal(parseSpecCardFromWebview({ type: 'saveRow', kind: 'baseline', fields: {} }), undefined);
  assert.equal(parseSpecCardFromWebview({ type: 'saveRow', kind: 'paper', fields: { tau: 3 } }), undefined);
  assert.equal(parseSpecCardFromWebview({ type: 'saveRow', kind: 'paper', fields: { label: 'x'.repeat(2001) } }), undefined);
  assert.equal(parseSpecCardFromWebview({ type: 'saveRow', kind: 'paper', fields: [] }), undefined);
  assert.equal(parseSpecCardFromWebview({ type: 'addReferenceLine' }), undefined);
  assert.equal(parseSpecCardFromWebview(null), undefined);
});

test('a row from the form: text becomes numbers, p_k a list, yes/no a boolean; empty inputs left out; the run is the card\'s, not the page\'s', () => {
  const got = specRowFromForm(RUN, 'paper', {
    label: ' DFlash Table 2 ',
    tau: '6.5',
    tauDefinition: 'completion-per-verify',
    pk: '0.9, 0.8,0.7',
    acceptanceRate: '',
    source: 'arXiv, Table 2',
    'setting.temperature': '1',
    'setting.maxTokens': '2048',
    'setting.thinking': 'false',
    'setting.model': ' Qwen3-8B ',
    'setting.blockSize': '',
  });
  assert.ok('row' in got, JSON.stringify(got));
  assert.deepEqual(got.row, {
    run: RUN,
    kind: 'paper',
    label: 'DFlash Table 2',
    tauDefinition: 'completion-per-verify',
    tau: 6.5,
    pk: [0.9, 0.8, 0.7],
    source: 'arXiv, Table 2',
    settings: { temperature: 1, maxTokens: 2048, thinking: false, model: 'Qwen3-8B' },
  });
  // What is saved reads back as the same row.
  assert.deepEqual(parseReferences(serializeReferences([], [got.row])).specRows, [got.row]);
});

test('a bad row from the form: each problem names its input and what it got; nothing else is needed to say it', () => {
  const got = specRowFromForm(RUN, 'reference', { label: '', tau: 'six', tauDefinition: '', pk: '0.5, 0.9', acceptanceRate: '1.5', 'setting.temperature': 'warm', 'setting.thinking': 'maybe' });
  assert.ok('problems' in got);
  const by = Object.fromEntries(got.problems.map((p) => [p.field, p.message]));
  assert.deepEqual(Object.keys(by).sort(), ['acceptanceRate', 'label', 'pk', 'setting.temperature', 'setting.thinking', 'tau', 'tauDefinition']);
  assert.match(by.tau, /"tau" must be a number ≥ 1 .*got "six"/);
  assert.match(by.tauDefinition, /"tauDefinition" must say how τ was computed/);
  assert.match(by.pk, /"pk" must not rise with k/);
  assert.match(by.acceptanceRate, /from 0 to 1, got 1\.5/);
  assert.match(by['setting.temperature'], /^setting\.temperature: must be a number, got "warm"$/);
  assert.match(by['setting.thinking'], /^setting\.thinking: must be a boolean, got "maybe"$/);
  assert.match(by.label, /"label" must be a non-empty string/);
  // τ written without the bonus token (below 1) is refused with what to do.
  const low = specRowFromForm(RUN, 'paper', { label: 'p', tau: '0.8', tauDefinition: 'accepted-per-step-plus-one' });
  assert.ok('problems' in low && /add 1/.test(low.problems[0].message));
});

test('row ids: from the content, stable when another row goes; identical rows get distinct ids; removing by id removes that one', () => {
  const other = { ...paper, run: 'gpu1/host/other' };
  const ids = specRowIds([paper, reference, other]);
  assert.equal(new Set(ids).size, 3);
  assert.deepEqual(specRowIds([paper, other]), [ids[0], ids[2]]);
  assert.deepEqual(withSpecRowRemoved([paper, reference, other], ids[1]), [paper, other]);
  assert.deepEqual(withSpecRowRemoved([paper, reference], 'r-none'), [paper, reference]);
  const twins = specRowIds([paper, paper]);
  assert.notEqual(twins[0], twins[1]);
  assert.deepEqual(withSpecRowRemoved([paper, paper], twins[1]), [paper]);
  // A row's settings in another key order are the same row.
  assert.equal(specRowIds([{ ...paper, settings: { model: 'Qwen3-8B', maxTokens: 256, temperature: 1 } }])[0], ids[0]);
  // Where the card puts a run's entered rows: its paper rows, then its reference rows, in the file's order.
  assert.deepEqual(enteredRowOrder(RUN, [reference, other, paper]), [2, 0]);
});

test('specCardOf: why there is no checkpoint row, each case said apart; spec.json problems are notes', () => {
  const meta = (id: string, profile: string, kind?: string) => ({ id, profile, checkpoint: `/runs/d/step_1`, step: 1, startedAt: '2026-01-02T00:00:00Z', command: 'c', cwd: '', run: { host: 'gpu1', target: 'host', name: 'd', path: '/runs/d' }, ...(kind ? { kind } : {}) });
  const raw = (id: string, profile: string, o: { kind?: string; status?: string; spec?: string; alive?: boolean } = {}): RawEval => ({
    id,
    files: { meta: Buffer.from(JSON.stringify(meta(id, profile, o.kind))), ...(o.status !== undefined ? { status: Buffer.from(o.status) } : {}), ...(o.spec !== undefined ? { spec: Buffer.from(o.spec) } : {}) },
    logBytes: 1,
    alive: o.alive ?? false,
  });
  const records = (...r: RawEval[]) => toEvalRecords(r, (id) => `/runs/d/.remote-runs/evals/${id}`);
  assert.match(cardEmptyReason(RUN, [])!, /^No eval of gpu1\/host\/dflash yet: measure a checkpoint with a speculative-server eval profile .*`remote-runs eval PROFILE gpu1\/host\/dflash\/STEP`\.$/);
  assert.match(cardEmptyReason(RUN, records(raw('a', 'loss'), raw('b', 'bleu')))!, /^2 eval\(s\) of gpu1\/host\/dflash \(profile bleu, loss\), none of them speculative-server/);
  const spec = records(raw('c', 'drafter', { kind: 'speculative-server', status: '1' }), raw('d', 'drafter', { kind: 'speculative-server', alive: true }), raw('e', 'drafter', { kind: 'speculative-server', status: '0', spec: '{' }));
  assert.match(cardEmptyReason(RUN, spec)!, /^3 speculative-server eval\(s\) of gpu1\/host\/dflash, none passed with its result: /);
  for (const part of ['1 failed', '1 running', '1 spec.json unreadable']) assert.ok(cardEmptyReason(RUN, spec)!.includes(part), part);
  const card = specCardOf({ run: RUN, records: spec, references: [paper] });
  assert.ok(card.notes.includes(cardEmptyReason(RUN, spec)!), 'the reason replaces the general note');
  assert.ok(card.notes.some((n) => /^eval e: its spec\.json is left out: spec\.json is not JSON/.test(n)));
  const good = records(raw('f', 'drafter', { kind: 'speculative-server', status: '0', spec: formatSpecRecord({ version: 1, result: result() }) }));
  assert.equal(cardEmptyReason(RUN, good), undefined);
  assert.deepEqual(specCardOf({ run: RUN, records: good, references: [paper] }).rows.map((r) => r.kind), ['checkpoint', 'paper']);
});
