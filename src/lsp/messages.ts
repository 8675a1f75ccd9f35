/**
 * The words of the language server: diagnostic messages and hover text for an analysis. A reference that
 * matches nothing always says what is there instead, and why it is empty, never just "not found".
 */
import { formatAge, formatBytes, formatCheckpointBytes } from '../core/util/format';
import { checkpointLabel, latestCheckpoint, latestPhrase } from '../core/types';
import { parseCheckpointName } from '../core/discovery/checkpointLayout';
import { formatPlace } from '../shared/lspProtocol';
import { displayName, displayText } from '../shared/display';
import { mdCode, mdText, plainCode } from './markdown';
import type { Analysis, Found } from './analysis';
import { checkpointFolders } from './analysis';
import type { Fallback } from './finder';

/** Entry names shown before "…". */
const SHOWN = 6;

/** The problem with a reference, or undefined when it points at something (or cannot be told). */
export function problemOf(a: Analysis): { message: string; severity: 'warning' | 'information' } | undefined {
  const where = formatPlace(a.place);
  switch (a.kind) {
    case 'exists':
      return undefined;
    case 'error':
      // A stopped or missing container is a fact about the reference; an unreachable host is about the network.
      if (a.errorKind === 'container-stopped' || a.errorKind === 'container-missing') {
        return { message: `${plainCode(a.path)} cannot be checked on ${where}: ${displayText(a.message)}`, severity: 'information' };
      }
      return undefined;
    case 'missing':
      if (a.reason === 'permission-denied') {
        return { message: `${plainCode(a.path)} cannot be checked on ${where}: a folder on the way cannot be read by the login user (permission denied)`, severity: 'warning' };
      }
      return { message: `${plainCode(a.path)} does not exist on ${where}${a.nearest ? `; ${holds(a.nearest.path, a.nearest.children)}` : ''}`, severity: 'warning' };
    case 'glob':
      if (a.matches.length > 0 || a.truncated) return undefined;
      return { message: globNothing(a), severity: 'warning' };
  }
}

function globNothing(a: Extract<Analysis, { kind: 'glob' }>): string {
  const head = `${plainCode(a.path)} matches nothing on ${formatPlace(a.place)}`;
  switch (a.dirState) {
    case 'path-missing':
      return `${head}: ${plainCode(a.dir)} does not exist`;
    case 'permission-denied':
      return `${head}: ${plainCode(a.dir)} cannot be read by the login user (permission denied)`;
    case 'not-a-directory':
      return `${head}: ${plainCode(a.dir)} is a file, not a folder`;
    case 'ok':
      break;
  }
  if (a.oneLevelDown.length > 0) return `${head}; ${oneLevelDown(a.oneLevelDown, a.path)}`;
  return `${head}; ${holds(a.dir, a.dirChildren)}`;
}

/** "7 checkpoints are in `step_N/checkpoint.pt` one level down" */
function oneLevelDown(found: readonly Found[], glob: string): string {
  const parents = found.map((f) => f.path.split('/').slice(-2)[0]);
  const names = [...new Set(found.map((f) => f.name))];
  const templates = [...new Set(parents.map((p) => p.replace(/\d+/g, 'N')))];
  const areCheckpoints = parents.every((p) => parseCheckpointName(p, true) !== undefined);
  const folder = templates.length === 1 ? templates[0] : '*';
  const file = names.length === 1 ? names[0] : glob.slice(glob.lastIndexOf('/') + 1);
  const n = found.length;
  const what = areCheckpoints ? `${n} checkpoint${n === 1 ? '' : 's'}` : `${n} match${n === 1 ? '' : 'es'}`;
  return `${what} ${n === 1 ? 'is' : 'are'} in ${plainCode(`${folder}/${file}`)} one level down`;
}

/** "`/workspace/checkpoints` holds 7 checkpoints (step_10000 … step_22000, newest step_22000)" and other cases. */
function holds(dir: string, children: readonly Found[]): string {
  if (children.length === 0) return `${plainCode(dir)} is an empty folder`;
  const ckpts = checkpointFolders(children);
  if (ckpts.length > 0) {
    const oldest = ckpts[ckpts.length - 1];
    const range = ckpts.length === 1 ? displayName(ckpts[0].name) : `${displayName(oldest.name)} … ${displayName(ckpts[0].name)}`;
    return `${plainCode(dir)} holds ${ckpts.length} checkpoint${ckpts.length === 1 ? '' : 's'} (${range}, newest ${displayName(ckpts[0].name)})`;
  }
  const names = [...children].sort((x, y) => (x.name < y.name ? -1 : 1)).map((c) => (c.type === 'd' ? `${displayName(c.name)}/` : displayName(c.name)));
  return `${plainCode(dir)} holds ${names.length} entr${names.length === 1 ? 'y' : 'ies'}: ${names.slice(0, SHOWN).join(', ')}${names.length > SHOWN ? ', …' : ''}`;
}

/** The information-level hint on a `2>/dev/null || echo …` fallback. */
export function fallbackHint(f: Fallback, nearby?: Analysis): string {
  const prints = f.says === 'true' || f.says === ':' ? 'succeeds silently' : `prints "${displayText(f.says)}"`;
  let text =
    `${plainCode(f.text)} ${prints} for every failure alike: nothing matching, the folder missing, permission denied, ` +
    `the container stopped or missing, the command not installed. \`2>/dev/null\` hides the error that would tell them apart.`;
  if (nearby?.kind === 'glob' && nearby.matches.length === 0 && nearby.oneLevelDown.length > 0) {
    text += ` Here it would say so while ${oneLevelDown(nearby.oneLevelDown, nearby.path)}.`;
  }
  return text;
}

/**
 * Markdown for a hover over a reference. Where the reference has a diagnostic, VS Code already shows its message in
 * the same hover: this one then adds only what the message does not say (the entries it summed up), never the
 * message again (issue 17: the diagnostic hover repeated its message); undefined when there is nothing to add.
 */
export function hoverOf(a: Analysis): string | undefined {
  const where = mdText(formatPlace(a.place));
  switch (a.kind) {
    case 'error':
      return problemOf(a) ? undefined : `Cannot check ${mdCode(a.path)} on ${where}: ${mdText(a.message)}`;
    case 'missing':
      if (!problemOf(a)) return `${mdCode(a.path)} does not exist on ${where}`;
      return a.reason === 'path-missing' && a.nearest && a.nearest.children.length > 0 ? entryList(`${mdCode(a.nearest.path)} on ${where} holds`, a.nearest.children, a.remoteNow) : undefined;
    case 'glob': {
      if (a.matches.length === 0) {
        if (!problemOf(a)) return `${mdCode(a.path)} matches nothing on ${where} (the listing was cut short)`;
        if (a.oneLevelDown.length > 0) return entryList(`One level down on ${where}`, a.oneLevelDown, a.remoteNow, a.dir);
        return a.dirState === 'ok' && a.dirChildren.length > 0 ? entryList(`${mdCode(a.dir)} on ${where} holds`, a.dirChildren, a.remoteNow) : undefined;
      }
      const lines = a.matches.slice(0, 10).map((m) => `- ${mdCode(m.name)}${m.type === 'd' ? '/' : ''} — ${sizeAge(m, a.remoteNow)}`);
      const total = a.matches.reduce((s, m) => s + m.bytes, 0);
      return [`**glob** ${mdCode(a.path)} matches ${a.matches.length} entr${a.matches.length === 1 ? 'y' : 'ies'} on ${where} (${formatBytes(total)})`, '', ...lines, ...(a.matches.length > 10 ? ['- …'] : [])].join('\n');
    }
    case 'exists':
      return existsHover(a, where);
  }
}

function existsHover(a: Extract<Analysis, { kind: 'exists' }>, where: string): string {
  const e = a.entry;
  const ctx = a.context;
  const out: string[] = [];
  if (ctx?.checkpoint && ctx.checkpoint.path === e.path) {
    const c = ctx.checkpoint;
    out.push(`**checkpoint** ${mdCode(c.name)} (${mdText(checkpointLabel(c))}${c.newest ? ', newest' : ''}) of run ${mdCode(ctx.run.name)} on ${where} · ${formatCheckpointBytes(c)} · ${formatAge(c.mtime, a.remoteNow)}`);
    if (c.files.length) out.push('', ...c.files.slice(0, 12).map((f) => `- ${mdCode(f.name)} — ${formatBytes(f.bytes)}`));
    return out.join('\n');
  }
  if (ctx && ctx.run.path === e.path) {
    const r = ctx.run;
    const newest = latestCheckpoint(r);
    out.push(`**run** ${mdCode(r.name)} on ${where}${r.live ? ' · ● live' : ''} · ${r.checkpoints.length} checkpoint${r.checkpoints.length === 1 ? '' : 's'}`);
    if (newest) out.push('', `latest step ${newest.step}: ${mdCode(newest.name)} · ${formatCheckpointBytes(newest)} · ${formatAge(newest.mtime, a.remoteNow)}`);
    out.push('', `metrics: ${r.metrics.length ? r.metrics.map((m) => `${mdCode(m.slice(r.path.length + 1))}`).join(', ') : 'none found'}`);
    return out.join('\n');
  }
  if (e.type === 'd') {
    out.push(`**folder** ${mdCode(e.path)} on ${where} · ${a.children.length} entr${a.children.length === 1 ? 'y' : 'ies'} · ${formatBytes(e.bytes)} in ${a.files} file${a.files === 1 ? '' : 's'} · changed ${formatAge(e.mtime, a.remoteNow)}`);
    const ckpts = checkpointFolders(a.children);
    const shown = ckpts.length ? ckpts : [...a.children].sort((x, y) => (x.name < y.name ? -1 : 1));
    if (shown.length) out.push('', ...shown.slice(0, 10).map((c) => `- ${mdCode(c.name)}${c.type === 'd' ? '/' : ''} — ${sizeAge(c, a.remoteNow)}`), ...(shown.length > 10 ? ['- …'] : []));
  } else {
    out.push(`**file** ${mdCode(e.path)} on ${where} · ${formatBytes(e.bytes)} · modified ${formatAge(e.mtime, a.remoteNow)}`);
  }
  if (ctx?.checkpoint) out.push('', `in checkpoint ${mdCode(ctx.checkpoint.name)} (${mdText(checkpointLabel(ctx.checkpoint))}${ctx.checkpoint.newest ? ', newest' : ''}) of run ${mdCode(ctx.run.name)}`);
  else if (ctx) out.push('', `in run ${mdCode(ctx.run.name)}`);
  return out.join('\n');
}

/** A heading and up to 10 entries with size and age, newest checkpoints first (names relative to `base`). */
function entryList(heading: string, entries: readonly Found[], now: number, base?: string): string {
  const name = (f: Found): string => (base && f.path.startsWith(`${base}/`) ? f.path.slice(base.length + 1) : f.name);
  const ckpts = checkpointFolders(entries);
  // Checkpoint folders newest first; entries one level down (`step_N/checkpoint.pt`) by their folder's number, newest
  // first too; anything else by name.
  const shown =
    ckpts.length === entries.length
      ? ckpts
      : [...entries].sort((x, y) => (base ? name(y).localeCompare(name(x), 'en', { numeric: true }) : name(x).localeCompare(name(y), 'en', { numeric: true })));
  const lines = shown.slice(0, 10).map((f) => `- ${mdCode(name(f))}${f.type === 'd' ? '/' : ''} — ${sizeAge(f, now)}`);
  return [`${heading}:`, '', ...lines, ...(shown.length > 10 ? [`- … ${shown.length - 10} more`] : [])].join('\n');
}

/** "3.2 GB · 10 min ago" */
export function sizeAge(f: Found, now: number): string {
  return `${formatBytes(f.bytes)} · ${formatAge(f.mtime, now)}`;
}
