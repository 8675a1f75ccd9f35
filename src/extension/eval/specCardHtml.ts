/**
 * The speculative-decoding card's page (issue 38): the card of core/eval/spec/card.ts as the command line prints it
 * (src/cli/card.ts formatCard), in a webview. One row per evaluated checkpoint (step, τ with its definition,
 * p_1…p_K, acceptance, tokens/s, profile), then the paper and reference rows entered for the run; each row's τ and
 * p_k against the paper row (compareRows: absolute and relative, marked when τ was recomputed under the paper's
 * definition, said when it cannot be compared), the settings that differ from the paper row's named in the row, and
 * the settings checklist with every setting that differs or is unknown on some rows marked. Under it, the form that
 * enters a paper or reference row (its inputs named as references.ts specRowFromForm reads them).
 *
 * The page is static (its buttons and form); the card section is redrawn in place (`#card`) with HTML built here, so
 * a half-filled form survives a new eval or a changed references file. The other pages' CSP (metrics/html.ts): the
 * one inline script by this page's nonce, no inline handlers or styles, the stylesheet from media/. Every remote or
 * user string is escaped (tablePage.ts escapeHtml: display.ts first, then markup).
 *
 * DOM contract (the end-to-end tests read it): `table.spec-card`, `tr[data-kind="checkpoint"|"paper"|"reference"]`
 * each with `data-label` and a `td.tau`; checklist items `li[data-setting="<SpecSettingKey>"]`, class `differs` when
 * the rows' values differ (`unknown` when some rows do not say it); `button#add-paper`, `button#add-reference`, the
 * form's inputs by name, `button#save-row`; each entered row's `button.remove-row`. Pure: no `vscode`.
 */
import { CHECKLIST_KEYS, type CardRow, type RowComparison, type SpecCard } from '../../core/eval/spec/card';
import { TAU_DEFINITION_TEXT, type TauDefinition } from '../../core/eval/spec/definitions';
import { SPEC_SETTINGS, SPEC_SETTING_KEYS } from '../../core/eval/spec/settings';
import type { SpecSettingKey } from '../../core/eval/spec/types';
import { makeNonce, pageHead } from '../metrics/html';
import { escapeHtml } from '../table/tablePage';

/** What the card section shows besides the card. */
export interface SpecCardState {
  card: SpecCard;
  /** Aligned with card.rows: the id of each entered row (references.ts specRowIds), undefined for checkpoint rows. */
  rowIds: readonly (string | undefined)[];
  /** The run's evals were never listed yet. */
  listing: boolean;
  /** Why no checkpoint row (core card.ts cardEmptyReason); undefined when there are some. */
  emptyReason?: string;
  /** Why the references file cannot be written (it holds what could not be read): rows cannot be added or removed. */
  blocked?: string;
  /** Where entered rows are kept (the references file's path, or that they live in memory without a workspace). */
  keptIn: string;
}

export interface SpecCardPage {
  /** webview.cspSource */
  cspSource: string;
  /** media/specCard.css as a webview URI. */
  styleUri: string;
  /** The run's address, host/target/run. */
  run: string;
  state: SpecCardState;
  nonce?: string;
}

const num = (v: number | undefined, digits = 3): string => (v === undefined ? '' : String(Number(v.toFixed(digits))));
const signed = (v: number, digits = 3): string => `${v >= 0 ? '+' : '−'}${num(Math.abs(v), digits)}`;
const sign = (v: number): string => (v > 0 ? 'pos' : v < 0 ? 'neg' : 'zero');

function rowName(r: CardRow): string {
  return r.kind === 'checkpoint' ? r.label : `${r.kind}: ${r.label}`;
}

/** τ against the paper's, absolute and relative; marked when recomputed, or why it cannot be compared. */
function vsCell(c: RowComparison | undefined, isPaper: boolean): string {
  if (isPaper) return '<td class="vs paper-self">the paper row</td>';
  if (!c) return '<td class="vs"></td>';
  const parts: string[] = [];
  if (c.tau.kind === 'compared') {
    const rel = c.tau.rel !== undefined ? ` (${signed(c.tau.rel * 100, 1)}%)` : '';
    const conv = c.tau.converted ? `<span class="converted" title="${escapeHtml(c.tau.converted)}">* recomputed under the paper's definition: ${escapeHtml(c.tau.converted)}</span>` : '';
    parts.push(`<span class="tau-diff ${sign(c.tau.abs)}">${escapeHtml(signed(c.tau.abs) + rel)}</span>${conv}`);
  } else {
    parts.push(`<span class="not-comparable">τ not compared: ${escapeHtml(c.tau.why)}</span>`);
  }
  if (c.settingsDiffer.length > 0) parts.push(`<span class="settings-differ">! ${escapeHtml(c.settingsDiffer.map((k) => `${SPEC_SETTINGS[k].label} differs`).join(', '))}</span>`);
  if (c.settingsUnknown.length > 0) parts.push(`<span class="settings-unknown">? ${escapeHtml(c.settingsUnknown.map((k) => SPEC_SETTINGS[k].label).join(', '))} not known on both</span>`);
  const cls = c.settingsDiffer.length > 0 ? ' differs' : '';
  return `<td class="vs${cls}">${parts.join('')}</td>`;
}

function rowHtml(card: SpecCard, i: number, K: number, defs: TauDefinition[], id: string | undefined, blocked: boolean): string {
  const r = card.rows[i];
  const c = card.comparisons[i];
  const hasPaper = card.paper !== undefined;
  const def = TAU_DEFINITION_TEXT[r.tauDefinition];
  const pk = Array.from({ length: K }, (_, k) => {
    if (k >= r.pk.length) return '<td class="num pk"></td>';
    const d = c?.pk[k];
    const diff = d ? ` <span class="diff ${sign(d.abs)}">(${escapeHtml(signed(d.abs))})</span>` : '';
    return `<td class="num pk">${escapeHtml(num(r.pk[k]))}${diff}</td>`;
  }).join('');
  const label = r.kind === 'checkpoint' ? escapeHtml(r.label) : `<span class="kind">${r.kind}</span> ${escapeHtml(r.label)}`;
  // An entered row's source is part of what it says (a paper's table); a checkpoint row's (its eval's id) is a hover.
  const source = r.source && r.kind !== 'checkpoint' ? `<span class="source">${escapeHtml(r.source)}</span>` : '';
  const titled = r.source && r.kind === 'checkpoint' ? ` title="${escapeHtml(r.source)}"` : '';
  const remove = id !== undefined ? `<button type="button" class="remove-row" data-id="${escapeHtml(id)}" title="Remove this row from the references file"${blocked ? ' disabled' : ''}>Remove</button>` : '';
  return (
    `<tr data-kind="${r.kind}" data-label="${escapeHtml(r.label)}"${id !== undefined ? ` data-id="${escapeHtml(id)}"` : ''}>` +
    `<th scope="row"${titled}>${label}${source}</th>` +
    `<td class="num step">${r.step !== undefined ? String(r.step) : ''}</td>` +
    `<td class="num tau" data-definition="${escapeHtml(r.tauDefinition)}" title="τ: ${escapeHtml(def)}">${escapeHtml(num(r.tau) || '?')}</td>` +
    `<td class="tau-def" title="${escapeHtml(def)}">${defs.indexOf(r.tauDefinition) + 1}</td>` +
    (hasPaper ? vsCell(c, i === card.paper) : '') +
    pk +
    `<td class="num acceptance">${escapeHtml(num(r.acceptanceRate))}</td>` +
    `<td class="num tps">${escapeHtml(num(r.outputTokensPerSec, 1))}</td>` +
    `<td class="profile">${escapeHtml(r.profile ?? '')}</td>` +
    `<td class="actions">${remove}</td>` +
    '</tr>'
  );
}

function checklistHtml(card: SpecCard): string {
  const names = card.rows.map(rowName);
  const items = card.checklist.map((c) => {
    const values = c.values.map((v, i) => `<span class="value${v === undefined ? ' unsaid' : ''}">${escapeHtml(names[i])}: ${escapeHtml(v === undefined ? '?' : String(v))}</span>`).join(' ');
    const word = c.status === 'differs' ? 'differs' : c.status === 'unknown' ? 'not known on every row' : c.status === 'same' ? 'same on every row' : 'said by no row';
    return `<li data-setting="${escapeHtml(c.key)}" class="${c.status}${c.flagged ? ' flagged' : ''}"><span class="mark">${c.flagged ? '!' : ''}</span><span class="setting">${escapeHtml(c.label)}</span> <span class="status">${word}</span> <span class="values">${values}</span></li>`;
  });
  return `<h2>Settings checklist</h2>\n<p class="note">Marked (!): a setting whose value differs between the rows, or that some rows do not say. τ moves with each of these: a τ at temperature 1 is not the τ at temperature 0.</p>\n<ul class="checklist">\n${items.join('\n')}\n</ul>`;
}

/** The card section (`#card`): the table or why there is no checkpoint row, the τ definitions, the checklist, notes. */
export function specCardSectionHtml(state: SpecCardState): string {
  const { card } = state;
  const out: string[] = [];
  if (state.blocked) out.push(`<p class="blocked" role="alert">Rows cannot be added or removed: ${escapeHtml(state.blocked)}</p>`);
  if (state.listing) out.push('<p class="empty" data-empty="listing">Listing the evals of this run…</p>');
  else if (state.emptyReason) out.push(`<p class="empty" data-empty="no-checkpoint-row">${escapeHtml(state.emptyReason)}</p>`);
  if (card.rows.length > 0) {
    const K = Math.max(0, ...card.rows.map((r) => r.pk.length));
    const defs = [...new Set(card.rows.map((r) => r.tauDefinition))];
    const head =
      '<th scope="col">row</th><th scope="col" class="num">step</th><th scope="col" class="num">τ</th><th scope="col">τ def.</th>' +
      (card.paper !== undefined ? '<th scope="col">τ vs paper</th>' : '') +
      Array.from({ length: K }, (_, k) => `<th scope="col" class="num">p_${k + 1}</th>`).join('') +
      '<th scope="col" class="num">acceptance</th><th scope="col" class="num">tokens/s</th><th scope="col">profile</th><th scope="col"></th>';
    const body = card.rows.map((_, i) => rowHtml(card, i, K, defs, state.rowIds[i], state.blocked !== undefined)).join('\n');
    out.push(`<table class="spec-card" aria-label="Speculative-decoding card"><thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table>`);
    out.push(`<ol class="tau-definitions" aria-label="τ definitions">${defs.map((d) => `<li data-definition="${escapeHtml(d)}">${escapeHtml(TAU_DEFINITION_TEXT[d])}</li>`).join('')}</ol>`);
    out.push('<p class="note">p_k: the share of verify steps that accepted at least k draft tokens. Differences are the row\'s value minus the paper row\'s.</p>');
    out.push(checklistHtml(card));
  }
  for (const n of card.notes) out.push(`<p class="note">${escapeHtml(n)}</p>`);
  out.push(`<p class="note kept">Paper and reference rows are kept in ${escapeHtml(state.keptIn)}.</p>`);
  return out.join('\n');
}

function inputHtml(name: string, label: string, hint = ''): string {
  return `<label><span>${escapeHtml(label)}</span><input name="${escapeHtml(name)}" type="text" maxlength="2000" autocomplete="off"${hint ? ` placeholder="${escapeHtml(hint)}"` : ''}></label>`;
}

/** The form of a paper or reference row: inputs named as specRowFromForm reads them. */
function formHtml(): string {
  const defs = (Object.keys(TAU_DEFINITION_TEXT) as TauDefinition[]).map((d) => `<option value="${escapeHtml(d)}">${escapeHtml(TAU_DEFINITION_TEXT[d])}</option>`).join('');
  // The checklist's settings first, in its order, then the others.
  const keys: SpecSettingKey[] = [...CHECKLIST_KEYS, ...SPEC_SETTING_KEYS.filter((k) => !CHECKLIST_KEYS.includes(k))];
  const settings = keys
    .map((k) => {
      const s = SPEC_SETTINGS[k];
      if (s.type === 'boolean') {
        return `<label><span>${escapeHtml(s.label)}</span><select name="setting.${k}"><option value="">not said</option><option value="true">yes</option><option value="false">no</option></select></label>`;
      }
      return inputHtml(`setting.${k}`, s.label, s.type === 'number' ? 'a number' : '');
    })
    .join('\n');
  return `<form id="row-form" hidden novalidate>
<h2 id="form-title">Add a row</h2>
${inputHtml('label', 'label', 'e.g. DFlash, Table 2')}
${inputHtml('tau', 'τ (acceptance length, bonus token counted)', 'e.g. 6.5')}
<label><span>τ definition (how the paper computed it)</span><select name="tauDefinition"><option value="">choose…</option>${defs}</select></label>
${inputHtml('pk', 'p_1, p_2, … (comma-separated)', 'e.g. 0.9, 0.8, 0.7')}
${inputHtml('acceptanceRate', 'acceptance rate (0 to 1)')}
${inputHtml('source', 'source', 'e.g. arXiv:…, Table 2')}
<fieldset><legend>Settings the numbers were measured with (leave empty what the source does not say)</legend>
${settings}
</fieldset>
<ul id="form-error" class="form-error" role="alert"></ul>
<div class="form-actions"><button type="submit" id="save-row">Save row</button><button type="button" id="cancel-row" class="secondary">Cancel</button></div>
</form>`;
}

const SCRIPT = `
const vscode = acquireVsCodeApi();
const form = document.getElementById('row-form');
const card = document.getElementById('card');
const errors = document.getElementById('form-error');
function clearErrors() {
  errors.replaceChildren();
  for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
}
function openForm(kind) {
  form.dataset.kind = kind;
  document.getElementById('form-title').textContent = kind === 'paper' ? 'Add paper row' : 'Add reference row';
  form.hidden = false;
  clearErrors();
  form.elements.namedItem('label').focus();
}
document.getElementById('add-paper').addEventListener('click', () => openForm('paper'));
document.getElementById('add-reference').addEventListener('click', () => openForm('reference'));
document.getElementById('cancel-row').addEventListener('click', () => { form.hidden = true; clearErrors(); });
document.getElementById('refresh').addEventListener('click', () => vscode.postMessage({ type: 'refresh' }));
form.addEventListener('submit', (e) => {
  e.preventDefault();
  const fields = {};
  for (const el of Array.from(form.elements)) if (el.name) fields[el.name] = el.value;
  vscode.postMessage({ type: 'saveRow', kind: form.dataset.kind, fields });
});
card.addEventListener('click', (e) => {
  const b = e.target.closest('button.remove-row');
  if (b) vscode.postMessage({ type: 'removeRow', id: b.dataset.id });
});
window.addEventListener('message', (e) => {
  const m = e.data;
  if (!m || typeof m.type !== 'string') return;
  if (m.type === 'card' && typeof m.html === 'string') {
    card.innerHTML = m.html;
  } else if (m.type === 'formError' && Array.isArray(m.problems)) {
    clearErrors();
    for (const p of m.problems) {
      const li = document.createElement('li');
      li.textContent = p.message;
      errors.append(li);
      const el = p.field ? form.elements.namedItem(p.field) : null;
      if (el && el.setAttribute) el.setAttribute('aria-invalid', 'true');
    }
  } else if (m.type === 'saved') {
    form.reset();
    form.hidden = true;
    clearErrors();
  }
});
vscode.postMessage({ type: 'ready' });
`;

/** The whole page: heading, buttons, the card section, the row form, the script. */
export function specCardHtml(page: SpecCardPage): string {
  const nonce = page.nonce ?? makeNonce();
  const title = `Speculative-decoding card of ${page.run}`;
  return `${pageHead({ cspSource: page.cspSource, nonce, styleUri: page.styleUri, title: 'Speculative-Decoding Card' }, escapeHtml)}<body>
<h1>${escapeHtml(title)}</h1>
<div class="actions"><button type="button" id="add-paper">Add paper row</button><button type="button" id="add-reference">Add reference row</button><button type="button" id="refresh" class="secondary" title="List the run's evals again">Refresh</button></div>
<section id="card" aria-live="polite">
${specCardSectionHtml(page.state)}
</section>
${formHtml()}
<script nonce="${escapeHtml(nonce)}">${SCRIPT}</script>
</body>
</html>`;
}
