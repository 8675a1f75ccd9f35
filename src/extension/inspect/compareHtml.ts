/**
 * The compare page: two checkpoints (A and B) read from their headers, and what differs between their model tensors
 * (core/inspect diffInspections): the tensors added (in B only), removed (in A only), changed in shape or dtype, and
 * the totals side by side. A side that could not be read says why with its kind's words (unreachable, not readable,
 * incomplete), never a blank table; two that hold the same tensors say so.
 * The eval table's CSP and escaping (html.ts, evalTableHtml.ts): nothing by default, the one inline script by this
 * page's nonce, the stylesheet from media/; every remote string is escaped. Pure: no `vscode`.
 */
import { diffInspections, formatCount, inspectCompleteness, stateParts, summaryLine, type Inspection, type InspectionDiff, type TensorInfo, type Totals } from '../../core/inspect';
import { emptyStateText } from '../../core/emptyStates';
import type { ErrorKind } from '../../core/types';
import { formatBytes } from '../../core/util/format';
import type { CompareAction } from '../../shared/metricsProtocol';
import { escapeHtml } from '../eval/evalTableHtml';
import { makeNonce, pageHead } from '../metrics/html';

/** One side as far as it got: being read, failed (with the error's kind), or read. */
export type SideState =
  | { state: 'reading' }
  | { state: 'failed'; kind: ErrorKind | undefined; message: string }
  | { state: 'read'; inspection: Inspection };

export interface CompareSide {
  /** `host/target/run/checkpoint`, as the CLI's addresses. */
  address: string;
  side: SideState;
}

export interface ComparePage {
  /** webview.cspSource */
  cspSource: string;
  /** media/compare.css as a webview URI. */
  styleUri: string;
  a: CompareSide;
  b: CompareSide;
  /** A and B are the one checkpoint (same host, target and path). */
  sameCheckpoint: boolean;
  nonce?: string;
}

/** Why a side's tensors cannot be compared, in the words its kind has; undefined when they can. */
export interface SideProblem {
  /** An ErrorKind, or `incomplete` / `unreadable` (what inspect found), or `reading`. */
  kind: string;
  title: string;
  message: string;
  hint?: string;
  /** The table is still shown under it (an incomplete checkpoint's tensors are what its headers list). */
  tableStillShown: boolean;
}

export function sideProblem(s: SideState): SideProblem | undefined {
  switch (s.state) {
    case 'reading':
      return { kind: 'reading', title: 'Reading', message: 'reading its headers (one remote command)…', tableStillShown: false };
    case 'failed': {
      const text = s.kind ? emptyStateText(s.kind) : undefined;
      return { kind: s.kind ?? 'error', title: text?.title ?? 'Error', message: s.message, ...(text ? { hint: text.hint } : {}), tableStillShown: false };
    }
    case 'read': {
      const c = inspectCompleteness(s.inspection);
      const modelTensors = s.inspection.tensors.some((t) => t.role === 'model');
      if (c.state === 'incomplete') return { kind: 'incomplete', title: 'Incomplete', message: c.reasons.join('; '), hint: 'The table compares the tensors its headers list; the rest is not there yet.', tableStillShown: modelTensors };
      if (!modelTensors) {
        const reason = c.reasons.join('; ') || summaryLine(s.inspection);
        return { kind: 'unreadable', title: 'Not readable', message: reason, hint: 'Its tensors cannot be listed from its headers, so there is nothing to compare them with.', tableStillShown: false };
      }
      return undefined;
    }
  }
}

/** What the page shows, decided before any markup (tested apart from the HTML). */
export interface CompareContent {
  problems: { side: 'a' | 'b'; problem: SideProblem }[];
  /** Both sides' tensors are listed: the diff. */
  diff?: InspectionDiff;
  identical: boolean;
}

export function compareContent(page: Pick<ComparePage, 'a' | 'b'>): CompareContent {
  const problems: CompareContent['problems'] = [];
  for (const side of ['a', 'b'] as const) {
    const p = sideProblem(page[side].side);
    if (p) problems.push({ side, problem: p });
  }
  const a = page.a.side;
  const b = page.b.side;
  if (a.state !== 'read' || b.state !== 'read' || problems.some((p) => !p.problem.tableStillShown)) return { problems, identical: false };
  const diff = diffInspections(a.inspection, b.inspection);
  return { problems, diff, identical: diff.added.length === 0 && diff.removed.length === 0 && diff.changed.length === 0 };
}

const SCRIPT = `
const vscode = acquireVsCodeApi();
for (const b of document.querySelectorAll('button[data-action]')) {
  b.addEventListener('click', () => vscode.postMessage({ type: 'compare', action: b.dataset.action }));
}
`;

const shapeText = (t: { dtype: string; shape: number[] }): string => `${t.dtype} [${t.shape.join(', ')}]`;
const count = (n: number): string => n.toLocaleString('en-US');
const bytesText = (b: number | null): string => (b === null ? '?' : formatBytes(b));

function delta(a: number, b: number): string {
  const d = b - a;
  return d === 0 ? '=' : `${d > 0 ? '+' : '−'}${count(Math.abs(d))}`;
}

function totalsRows(a: Totals, b: Totals, ia: Inspection, ib: Inspection): string {
  const dtypes = (t: Totals): string => t.dtypes.map(([d, n]) => `${d} ${formatCount(n)}`).join(', ') || '—';
  const rows: [key: string, label: string, a: string, b: string, change: string][] = [
    ['params', 'parameters', count(a.params), count(b.params), delta(a.params, b.params)],
    ['tensors', 'model tensors', count(a.tensors), count(b.tensors), delta(a.tensors, b.tensors)],
    ['bytes', 'bytes', bytesText(a.bytes), bytesText(b.bytes), a.bytes !== null && b.bytes !== null ? delta(a.bytes, b.bytes) : ''],
    ['dtypes', 'dtypes', dtypes(a), dtypes(b), dtypes(a) === dtypes(b) ? '=' : 'differ'],
    ['optimizer', 'optimizer tensors', count(a.optimizerTensors), count(b.optimizerTensors), delta(a.optimizerTensors, b.optimizerTensors)],
    ['state', 'other state (not in params)', stateParts(ia).join(' · ') || '—', stateParts(ib).join(' · ') || '—', ''],
    ['step', 'step', ia.step !== undefined ? String(ia.step) : '—', ib.step !== undefined ? String(ib.step) : '—', ''],
  ];
  return rows
    .map(([key, label, x, y, c]) => `<tr data-total="${key}"><th scope="row">${escapeHtml(label)}</th><td class="num">${escapeHtml(x)}</td><td class="num">${escapeHtml(y)}</td><td class="num">${escapeHtml(c)}</td></tr>`)
    .join('\n');
}

function diffRows(d: InspectionDiff): string {
  const row = (change: string, what: string, name: string, a: string, b: string): string =>
    `<tr data-change="${change}"><td class="change">${escapeHtml(what)}</td><td class="name">${escapeHtml(name)}</td><td>${escapeHtml(a)}</td><td>${escapeHtml(b)}</td></tr>`;
  return [
    ...d.removed.map((t: TensorInfo) => row('removed', 'removed', t.name, shapeText(t), '—')),
    ...d.added.map((t: TensorInfo) => row('added', 'added', t.name, '—', shapeText(t))),
    ...d.changed.map((c) => row('changed', c.changed.join(', '), c.name, shapeText(c.a), shapeText(c.b))),
  ].join('\n');
}

const ACTIONS: [CompareAction, string][] = [
  ['swap', 'Swap A and B'],
  ['changeB', 'Compare A with another…'],
  ['retry', 'Read both again'],
];

/** The whole page. */
export function compareHtml(page: ComparePage): string {
  const nonce = page.nonce ?? makeNonce();
  const content = compareContent(page);
  const sideSummary = (s: CompareSide): string => (s.side.state === 'read' ? summaryLine(s.side.inspection) : s.side.state === 'reading' ? 'reading its headers…' : 'not read');
  const sides = (['a', 'b'] as const)
    .map((k) => `<tr data-side="${k}"><th scope="row">${k.toUpperCase()}</th><td class="address">${escapeHtml(page[k].address)}</td><td class="summary">${escapeHtml(sideSummary(page[k]))}</td></tr>`)
    .join('\n');
  const problems = content.problems
    .map(({ side, problem: p }) => {
      const role = p.kind === 'reading' ? 'status' : 'alert';
      return `<div class="problem kind-${escapeHtml(p.kind)}" role="${role}" data-side="${side}" data-kind="${escapeHtml(p.kind)}"><strong>${side.toUpperCase()}: ${escapeHtml(p.title)}</strong> — ${escapeHtml(p.message)}${p.hint ? `<div class="hint">${escapeHtml(p.hint)}</div>` : ''}</div>`;
    })
    .join('\n');
  let body = '';
  const d = content.diff;
  if (d && page.a.side.state === 'read' && page.b.side.state === 'read') {
    const totals = `<table class="totals" aria-label="Totals"><thead><tr><th scope="col"></th><th scope="col" class="num">A</th><th scope="col" class="num">B</th><th scope="col" class="num">B − A</th></tr></thead><tbody>\n${totalsRows(d.totals.a, d.totals.b, page.a.side.inspection, page.b.side.inspection)}\n</tbody></table>`;
    const aligned = d.aligned ? `<p class="aligned">Names aligned: ${d.aligned.side.toUpperCase()}'s tensors under <code>${escapeHtml(d.aligned.prefix)}</code> are compared with the other's top level.</p>` : '';
    const same = page.sameCheckpoint ? ' A and B are the same checkpoint.' : '';
    const verdict = content.identical
      ? `<p class="identical" role="status">Identical: the same ${count(d.same)} model tensor${d.same === 1 ? '' : 's'} (names, shapes and dtypes) on both sides.${same}</p>`
      : `<p class="counts" role="status"><span data-count="added">${count(d.added.length)} added</span> · <span data-count="removed">${count(d.removed.length)} removed</span> · <span data-count="changed">${count(d.changed.length)} changed</span> · <span data-count="same">${count(d.same)} the same</span> (model tensors; optimizer, scheduler, RNG and callback state is not compared)</p>
<table class="diff" aria-label="Tensors that differ"><thead><tr><th scope="col">change</th><th scope="col">tensor</th><th scope="col">A</th><th scope="col">B</th></tr></thead><tbody>
${diffRows(d)}
</tbody></table>`;
    body = `${totals}\n${aligned}\n${verdict}`;
  }
  const retryable = content.problems.some((p) => p.problem.kind !== 'reading');
  const buttons = ACTIONS.map(([action, label]) => `<button type="button" data-action="${action}"${action === 'retry' && !retryable && !d ? ' disabled' : ''}>${escapeHtml(label)}</button>`).join('');
  return `${pageHead({ cspSource: page.cspSource, nonce, styleUri: page.styleUri, title: 'Compare checkpoints' }, escapeHtml)}<body>
<h1>Compare checkpoints</h1>
<div class="actions">${buttons}</div>
<table class="sides" aria-label="Checkpoints"><tbody>
${sides}
</tbody></table>
${problems}
${body}
<script nonce="${escapeHtml(nonce)}">${SCRIPT}</script>
</body>
</html>`;
}
