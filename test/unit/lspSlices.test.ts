/**
 * The language server's work on a big document: found line by line (a hover reads its own line only), analysed in
 * steps that give the event loop turns, up to a cap per document, and stopped by a newer version.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LoopTurns } from '../../src/core/util/delay';
import { RemoteRunsError } from '../../src/core/types';
import { MAX_LINE, findPathRefs, findPathRefsIn, scanLines } from '../../src/lsp/finder';
import { REF_CAP, analyseDocument, type AnalysisDeps } from '../../src/lsp/documentAnalysis';
import { RemoteIndex } from '../../src/lsp/remoteIndex';
import { diagnosticsOf } from '../../src/lsp/features';
import { TextDocument } from 'vscode-languageserver-textdocument';
import type { ConfigResult, ListParams, ListResult } from '../../src/shared/lspProtocol';

const roots = ['/workspace'];
const NOW = Date.UTC(2026, 0, 1);

function script(lines: number): string {
  const out = ['# remote-runs: gpu1/host'];
  for (let i = 1; i < lines; i++) out.push(i % 7 === 0 ? `ssh gpu1 ls /data/x${i} \\\n  /workspace/ckpt/step_${i}/a.pt` : `cp /workspace/ckpt/step_${i}/model.pt /tmp/x${i}`);
  return out.join('\n') + '\n';
}

test('findPathRefsIn reads the lines it is asked about and finds what the whole-document scan finds there', () => {
  const text = script(3_000);
  const all = findPathRefs(text, { roots });
  for (const probe of [0, 5, 700, 1_399, all.length - 1]) {
    const r = all[probe];
    for (const offset of [r.start, r.end, Math.floor((r.start + r.end) / 2)]) {
      const found = findPathRefsIn(text, offset, offset, { roots }).filter((x) => x.start <= offset && offset <= x.end);
      assert.deepEqual(found, [r], `offset ${offset}`);
    }
  }
  // A range over several lines, continued lines (`\`) included: the same references as the scan, in order.
  const from = all[40].start;
  const to = all[60].end;
  assert.deepEqual(findPathRefsIn(text, from, to, { roots }), all.filter((r) => r.end >= from && r.start <= to));
});

test('a line over MAX_LINE characters is reported, not scanned; a hover on it reads the window around it', () => {
  const long = `data = "${'A/'.repeat(MAX_LINE)}" ; x = "/workspace/ckpt/step_9/model.pt" ; "${'B'.repeat(MAX_LINE)}"`;
  const text = `ls /workspace/a\n${long}\nls /workspace/b\n`;
  const lines = [...scanLines(text, { roots })];
  assert.deepEqual(
    lines.map((l) => (l.long ? 'long' : l.refs?.map((r) => r.path).join(','))),
    ['/workspace/a', 'long', '/workspace/b', ''],
  );
  const at = text.indexOf('/workspace/ckpt/step_9/model.pt') + 5;
  assert.deepEqual(findPathRefsIn(text, at, at, { roots }).map((r) => r.path), ['/workspace/ckpt/step_9/model.pt']);
});

function deps(onList?: (p: ListParams) => void): AnalysisDeps {
  const config: ConfigResult = { hosts: [{ name: 'gpu1', address: 'gpu1', roots }], mappings: [] };
  const index = new RemoteIndex(async (p: ListParams): Promise<ListResult> => {
    onList?.(p);
    await new Promise((r) => setTimeout(r, 1));
    return { ok: true, resolved: p.path, state: 'ok', entries: [{ rel: 'ckpt', type: 'd', bytes: 0, mtime: NOW }, { rel: 'ckpt/step_1', type: 'd', bytes: 0, mtime: NOW }, { rel: 'ckpt/step_1/model.pt', type: 'f', bytes: 5, mtime: NOW }], truncated: false, remoteNow: NOW };
  });
  return { index, config: async () => config, places: async () => [{ host: 'gpu1', target: 'host' }], turns: new LoopTurns(5) };
}

test(`a document of 6,000 references: ${REF_CAP} analysed, in many turns of the event loop, the first one left out named`, async () => {
  const text = script(6_000);
  const all = findPathRefs(text, { roots });
  let turns = 0;
  let running = true;
  const tick = (): void => {
    turns++;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  const result = await analyseDocument(deps(), 'file:///big.sh', text).finally(() => (running = false));
  assert.ok(result.refs.length <= REF_CAP && result.refs.length > REF_CAP - 3, `${result.refs.length} references analysed`);
  assert.deepEqual(result.refs.map((r) => r.ref), all.slice(0, result.refs.length));
  assert.deepEqual(result.capped?.next, all[result.refs.length], 'the first reference not analysed');
  assert.equal(result.capped?.cap, REF_CAP);
  assert.equal(result.refs.filter((r) => r.analysis?.kind === 'missing').length, result.refs.length - 1, 'all analysed (step_1/model.pt exists)');
  assert.ok(turns > 5, `the event loop had turns while it ran: ${turns}`);
  // Under the cap: no cap said.
  assert.equal((await analyseDocument(deps(), 'file:///small.sh', script(50))).capped, undefined);
});

test('a newer version stops the analysis at its next step: cancelled, and no further listing asked', async () => {
  const controller = new AbortController();
  const asked: string[] = [];
  // Every reference in its own folder outside the run root: a listing each, unless stopped.
  const text = Array.from({ length: 3_000 }, (_, i) => `ssh gpu1 ls /srv/d${i}/x`).join('\n');
  const running = analyseDocument(deps((p) => asked.push(p.path)), 'file:///x.sh', text, controller.signal);
  await new Promise((r) => setTimeout(r, 30));
  controller.abort();
  const at = asked.length;
  await assert.rejects(running, (e: unknown) => e instanceof RemoteRunsError && e.kind === 'cancelled');
  await new Promise((r) => setTimeout(r, 30));
  assert.ok(asked.length < 3_000 && asked.length <= at + 8, `listings asked: ${at} when stopped, ${asked.length} in all`);
});

test('LoopTurns.hold: work in steps waits while a request is answered', async () => {
  const turns = new LoopTurns(1);
  let steps = 0;
  let stop = false;
  const worker = (async () => {
    while (!stop) {
      const until = Date.now() + 1;
      while (Date.now() < until);
      steps++;
      await turns.maybe();
    }
  })();
  await new Promise((r) => setTimeout(r, 10));
  let during = -1;
  await turns.hold(async () => {
    const before = steps;
    await new Promise((r) => setTimeout(r, 30));
    during = steps - before;
  });
  const after = steps;
  await new Promise((r) => setTimeout(r, 10));
  stop = true;
  await worker;
  assert.ok(during <= 1, `${during} steps while held`);
  assert.ok(steps > after, 'the work goes on once the request is answered');
});

test('what was not checked is said: a diagnostic on the first long line, one on the first reference past the cap', async () => {
  const long = `x = "${'A'.repeat(MAX_LINE + 1)}"`;
  const text = `${long}\nls /workspace/ckpt/step_1/model.pt\n${long}\n${script(2_500)}`;
  const doc = TextDocument.create('file:///mixed.sh', 'shellscript', 1, text);
  const result = await analyseDocument(deps(), doc.uri, text);
  assert.deepEqual(result.longLines, { count: 2, first: { start: 0, end: 200 } });
  const said = diagnosticsOf(doc, result).filter((d) => d.code === 'long-lines-skipped' || d.code === 'analysis-capped');
  assert.deepEqual(
    said.map((d) => [d.code, d.range.start.line, d.message]),
    [
      ['analysis-capped', doc.positionAt(result.capped!.next.start).line, `Remote Runs checks the first 2,000 remote paths of a file: the ones from line ${(doc.positionAt(result.capped!.next.start).line + 1).toLocaleString('en-US')} on are not checked here (hover one to check it)`],
      ['long-lines-skipped', 0, 'Remote Runs does not look for remote paths in lines over 20,000 characters: 2 lines are, this is the first (hover a path on one to check it)'],
    ],
  );
});
