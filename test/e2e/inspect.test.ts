/**
 * A checkpoint's contents in the sidebar of a real VS Code (code-server + Chromium) over the real test sshd (issue
 * 18): hovering a checkpoint shows its one-line summary; expanding it and its contents row lists the module groups
 * with their parameter counts, each opening on its tensors; an incomplete checkpoint says why first. Compare
 * Checkpoints… (from a checkpoint's context menu with B picked, and on two checkpoints selected together) shows the
 * rows and totals the core diff gives for those files. The checkpoints are files the real writers wrote
 * (test/fixtures/real/make_inspect.py, make_inspect_more.py).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import type { Frame } from 'playwright-core';
import { clearOverlays, expandTreeRow, expectRow, rowLabels, rowText, treeContextMenu, treeRow } from './treeRows';
import { act, hoverUntil, pickQuickItem, quickPickStep } from './ui';
import { diffInspections, inspectFiles, Pieces, type Inspection, type InspectionDiff } from '../../src/core/inspect';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { startTestHost, type TestHost } from '../harness/testHost';
import { testHostSettings } from './suite';

const FIX = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'inspect');
const MORE = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'inspect_more');
let host: TestHost;
let session: VSCodeSession;
let workspace: string;

before(async () => {
  host = await startTestHost();
  const root = path.join(host.dir, 'inspect-e2e');
  const ck = path.join(root, 'insp-run', 'checkpoints');
  fs.mkdirSync(path.join(ck, 'step_200'), { recursive: true });
  fs.copyFileSync(path.join(FIX, 'train_state.pt'), path.join(ck, 'step_200', 'train_state.pt'));
  fs.cpSync(path.join(FIX, 'hf_shards_broken'), path.join(ck, 'step_600'), { recursive: true });
  // For Compare: a state dict and the same model with its architecture edited (tensors added, removed, changed).
  fs.mkdirSync(path.join(ck, 'step_100'));
  fs.copyFileSync(path.join(MORE, 'base.pt'), path.join(ck, 'step_100', 'base.pt'));
  fs.mkdirSync(path.join(ck, 'step_700'));
  fs.copyFileSync(path.join(MORE, 'edited.pt'), path.join(ck, 'step_700', 'edited.pt'));
  execFileSync('chmod', ['-R', 'a+rX', root]);
  workspace = fs.mkdtempSync(path.join(tmpdir(), 'rr-e2e-ws-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      ...testHostSettings(host, [host.hostConfig('insp', { targets: ['host'], runRoots: [root] })]),
    },
  });
});

after(async () => {
  await session?.close();
  await host?.stop();
  if (workspace) fs.rmSync(workspace, { recursive: true, force: true });
});

test('hover a checkpoint: its summary; expand it: groups with params, tensors with dtype and shape', async () => {
  await withArtifactsOnFailure(session, 'inspect-tree', async () => {
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, 'insp');
    await expandTreeRow(session, 'host');
    await expandTreeRow(session, 'insp-run');
    await expectRow(session, 'step_200', /step_200/);
    const tip = session.page.locator('.monaco-hover, .workbench-hover').filter({ hasText: /params/ });
    await hoverUntil(session.page, treeRow(session, 'step_200'), tip, "the checkpoint's hover");
    assert.match(await tip.first().innerText(), /266 params · fp32 · 18 tensors · optimizer: AdamW state \(exp_avg, exp_avg_sq\) · step 20000/);
    await session.page.mouse.move(1, 1);
    await expandTreeRow(session, 'step_200');
    await expandTreeRow(session, 'contents');
    await expectRow(session, 'model › layers › 0 › self_attn', /64 params · 256 B · 4 tensors/);
    await expectRow(session, 'optimizer', /AdamW state \(exp_avg, exp_avg_sq\)/);
    await expandTreeRow(session, 'model › layers › 0 › self_attn');
    await expectRow(session, 'q_proj.weight', /float32 \[4, 4\]/);
    const labels = await rowLabels(session);
    assert.deepEqual(labels.filter((l) => /_proj\.weight$/.test(l)), ['q_proj.weight', 'k_proj.weight', 'v_proj.weight', 'o_proj.weight']);
  });
});

test('an incomplete checkpoint says why first: the shard shorter than its header, the one missing', async () => {
  await withArtifactsOnFailure(session, 'inspect-incomplete', async () => {
    await expandTreeRow(session, 'step_600');
    // Checkpoints are listed newest first: step_600's contents row is above step_200's (expanded by the test before).
    await expandTreeRow(session, 'contents', 'first');
    await expectRow(session, 'incomplete', /model-00003-of-00005\.safetensors is 6580 bytes, its header says 6680/);
    // Two rows share the label: the second names the missing shard.
    assert.match(await rowText(session, 'incomplete', 1), /4 of 5 shards .* \(missing: model-00002-of-00005\.safetensors; 6 of the 21 tensors its weight_map names are in it\)/);
  });
});

/** A checkpoint folder of the run as the pure readers see it, read whole from the fixture it was copied from. */
function readLocal(dir: string): Inspection {
  const files = fs.readdirSync(dir).map((f) => ({ name: f, size: fs.statSync(path.join(dir, f)).size, pieces: Pieces.whole(fs.readFileSync(path.join(dir, f))) }));
  return inspectFiles(files).inspection;
}

/** The compare page's document whose two sides are A and B (their addresses), once it shows a verdict. */
async function compareFrame(a: string, b: string, timeoutMs = 90_000): Promise<Frame> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const f of session.page.frames()) {
      const ok = await f
        .evaluate(
          ([x, y]) => {
            const addr = Array.from(document.querySelectorAll('table.sides td.address')).map((td) => td.textContent);
            return addr[0] === x && addr[1] === y && document.querySelector('p.counts, p.identical') !== null;
          },
          [a, b],
        )
        .catch(() => false);
      if (ok) return f;
    }
    if (Date.now() > deadline) throw new Error(`no compare page of ${a} and ${b}`);
    await session.page.waitForTimeout(200);
  }
}

/** What the page's table and totals say, to hold against the core diff. */
async function tableOf(frame: Frame): Promise<{ rows: string[][]; params: string[]; tensors: string[]; problems: string[] }> {
  const rows = await frame.locator('table.diff tbody tr').evaluateAll((trs) => trs.map((tr) => [(tr as HTMLElement).dataset.change ?? '', ...Array.from(tr.querySelectorAll('td')).map((td) => td.textContent ?? '')]));
  const cells = (key: string): Promise<string[]> => frame.locator(`table.totals tr[data-total="${key}"] td`).allInnerTexts();
  const problems = await frame.locator('.problem').evaluateAll((ds) => ds.map((d) => `${(d as HTMLElement).dataset.side}:${(d as HTMLElement).dataset.kind}:${d.textContent}`));
  return { rows, params: await cells('params'), tensors: await cells('tensors'), problems };
}

function expectedTable(d: InspectionDiff): { rows: string[][]; params: string[]; tensors: string[] } {
  const st = (t: { dtype: string; shape: number[] }): string => `${t.dtype} [${t.shape.join(', ')}]`;
  const delta = (x: number, y: number): string => (y === x ? '=' : `${y > x ? '+' : '−'}${Math.abs(y - x).toLocaleString('en-US')}`);
  return {
    rows: [
      ...d.removed.map((t) => ['removed', 'removed', t.name, st(t), '—']),
      ...d.added.map((t) => ['added', 'added', t.name, '—', st(t)]),
      ...d.changed.map((c) => ['changed', c.changed.join(', '), c.name, st(c.a), st(c.b)]),
    ],
    params: [d.totals.a.params.toLocaleString('en-US'), d.totals.b.params.toLocaleString('en-US'), delta(d.totals.a.params, d.totals.b.params)],
    tensors: [String(d.totals.a.tensors), String(d.totals.b.tensors), delta(d.totals.a.tensors, d.totals.b.tensors)],
  };
}

const RUN_DIR = (): string => path.join(host.dir, 'inspect-e2e', 'insp-run', 'checkpoints');

test('Compare Checkpoints… from a checkpoint, B picked: the rows and totals of the core diff', async () => {
  await withArtifactsOnFailure(session, 'inspect-compare', async () => {
    // step_700 is the newest, on top (the rows expanded above push step_100 below the fold).
    await treeContextMenu(session, 'step_700', /^Compare Checkpoints…$/);
    // One host, one target: the pick starts at the run.
    await quickPickStep(session, /\(3\/4\): run$/);
    await pickQuickItem(session, 'insp-run');
    const ckpts = await quickPickStep(session, /\(4\/4\): checkpoint$/);
    assert.deepEqual(ckpts, ['step_700', 'step_600', 'step_200', 'step_100']);
    await pickQuickItem(session, 'step_100');
    const frame = await compareFrame('insp/host/insp-run/step_700', 'insp/host/insp-run/step_100');
    const d = diffInspections(readLocal(path.join(RUN_DIR(), 'step_700')), readLocal(path.join(RUN_DIR(), 'step_100')));
    assert.ok(d.added.length > 0 && d.removed.length > 0 && d.changed.length > 0, 'the fixtures differ in all three ways');
    const shown = await tableOf(frame);
    const want = expectedTable(d);
    assert.deepEqual(shown.rows, want.rows);
    assert.deepEqual(shown.params, want.params);
    assert.deepEqual(shown.tensors, want.tensors);
    assert.deepEqual(shown.problems, []);
    assert.match(await frame.locator('p.counts').innerText(), new RegExp(`^${d.added.length} added · ${d.removed.length} removed · ${d.changed.length} changed · ${d.same} the same`));
  });
});

test('two checkpoints selected together: Compare opens on them, the incomplete one said first', async () => {
  await withArtifactsOnFailure(session, 'inspect-compare-selection', async () => {
    const { page } = session;
    const a = treeRow(session, 'step_200');
    const b = treeRow(session, 'step_600');
    await act(page, {
      what: 'step_200 and step_600 selected together',
      action: async () => {
        await clearOverlays(session);
        await a.click();
        await b.click({ modifiers: ['Control'] });
        await page.mouse.move(1, 1);
      },
      effect: async () => (await a.getAttribute('aria-selected')) === 'true' && (await b.getAttribute('aria-selected')) === 'true',
      describe: async () => `aria-selected ${await a.getAttribute('aria-selected')} / ${await b.getAttribute('aria-selected')}`,
    });
    await treeContextMenu(session, 'step_600', /^Compare Checkpoints…$/);
    // Of one run, the earlier step is A.
    const frame = await compareFrame('insp/host/insp-run/step_200', 'insp/host/insp-run/step_600');
    const d = diffInspections(readLocal(path.join(RUN_DIR(), 'step_200')), readLocal(path.join(RUN_DIR(), 'step_600')));
    const shown = await tableOf(frame);
    const want = expectedTable(d);
    assert.deepEqual(shown.rows, want.rows);
    assert.deepEqual(shown.params, want.params);
    assert.equal(shown.problems.length, 1, shown.problems.join('\n'));
    assert.match(shown.problems[0]!, /^b:incomplete:B: Incomplete — model-00003-of-00005\.safetensors is 6580 bytes, its header says 6680/);
  });
});
