import type { RemoteRunsCore } from '../core/service';
import { runsOf, skippedForLatest, skippedNote } from '../core/service';
import { RemoteRunsError, checkpointLabel, formatTarget, latestCheckpoint, latestPhrase, type RootListing, type Run, type RootEmptyKind } from '../core/types';
import { emptyStateText } from '../core/emptyStates';
import { cutShortText } from '../core/discovery/listParse';
import { DEFAULT_MAX_ENTRIES } from '../core/discovery/listScript';
import { formatAge, formatBytes, formatCheckpointBytes } from '../core/util/format';
import type { parseAddress } from '../core/address';
import { localCopyOf, partialPercent } from '../core/transfer';
import { displayName } from '../shared/display';

export interface CommandOutput {
  json: unknown;
  text: string;
  exitCode: number;
  /** Said on stderr whatever the format (the address named a folder that is part of a run, or holds one). */
  note?: string;
}

/** The JSON shape of a run, as documented in docs/cli.md. Checkpoints in step order. */
function latestSkipped(run: Run): { latestSkipped?: { name: string; incomplete: string }[] } {
  const latest = latestCheckpoint(run);
  const skipped = latest ? skippedForLatest(run, latest) : [];
  return skipped.length > 0 ? { latestSkipped: skipped } : {};
}

export function runJson(run: Run): unknown {
  return {
    name: run.name,
    path: run.path,
    live: run.live,
    metrics: run.metrics,
    checkpoints: run.checkpoints.map((c) => ({
      name: c.name,
      kind: c.kind,
      step: c.step,
      ...(c.epoch !== undefined ? { epoch: c.epoch } : {}),
      ...(c.save !== undefined ? { save: c.save } : {}),
      ...(c.alias ? { alias: c.alias } : {}),
      path: c.path,
      bytes: c.bytes,
      mtime: c.mtime,
      ...(c.kind === 'final' || c.fileGroup ? { files: c.files.map((f) => f.name) } : {}),
      ...(c.incomplete ? { incomplete: c.incomplete } : {}),
      // bytes counts only the files the listing saw (the folder reaches the walk's depth).
      ...(c.partialSize ? { partialSize: true } : {}),
      ...(c.pointedBy ? { pointedBy: c.pointedBy } : {}),
    })),
    // What `latest` names: the newest complete checkpoint (null when none is complete yet).
    latest: latestCheckpoint(run)?.name ?? null,
    // The newer checkpoints `latest` passed over as incomplete (pull …/latest says the same), when there are any.
    ...latestSkipped(run),
    ...(run.pointers ? { pointers: run.pointers } : {}),
  };
}

function rootJson(r: RootListing): unknown {
  // `truncated`: the listing of this root was cut short; `tooLarge`: the folders listed only in part (rel to the root).
  const cut = { truncated: r.truncated, ...(r.tooLarge ? { tooLarge: r.tooLarge } : {}) };
  return r.state === 'ok'
    ? { root: r.root, path: r.path, state: 'ok', runs: r.runs.length, ...cut, ...(r.unreadable ? { unreadable: r.unreadable } : {}) }
    : { root: r.root, path: r.path, state: r.state, message: r.message, seen: r.seen, ...cut };
}

// When no root holds a run, the failure names the most telling case; the message names every root's own.
const ROOT_PRIORITY: RootEmptyKind[] = ['no-checkpoints', 'empty', 'permission-denied', 'not-a-directory', 'path-missing'];

function unreadableText(u: NonNullable<RootListing['unreadable']>): string {
  return `${u.count} place${u.count === 1 ? '' : 's'} could not be read: ${u.messages.join('; ')}`;
}

/**
 * `downloads`: the download root `pull` uses (its --to): a checkpoint an interrupted pull left there is marked
 * `partial N% here`, one downloaded `downloaded` (read from the local records only).
 */
export async function lsCommand(core: RemoteRunsCore, addr: ReturnType<typeof parseAddress>, downloads?: string): Promise<CommandOutput> {
  if (!addr.target) {
    const { targets, problems } = await core.listTargets(addr.host);
    const lines = targets.map((t) => `${displayName(formatTarget(t)).padEnd(24)} ${t.kind.padEnd(7)} ${displayName(t.state)}${t.label && t.label !== t.id && t.kind !== 'host' ? `  (${displayName(t.label)})` : ''}`);
    for (const p of problems) lines.push(`! ${p}`);
    return {
      json: { targets: targets.map((t) => ({ id: formatTarget(t), kind: t.kind, state: t.state, label: t.label })), problems },
      text: `${lines.join('\n')}\n`,
      exitCode: 0,
    };
  }
  if (addr.run === undefined) {
    const listing = await core.listTarget(addr.host, addr.target);
    const runs = runsOf(listing);
    if (runs.length === 0) {
      const states = listing.roots.filter((r): r is Exclude<RootListing, { state: 'ok' }> => r.state !== 'ok');
      const kind = ROOT_PRIORITY.find((k) => states.some((s) => s.state === k)) ?? 'empty';
      const message = `No runs on ${addr.host}/${formatTarget(addr.target)}: ${states.map((s) => `${s.root}: ${emptyStateText(s.state).title.toLowerCase()}${s.seen.length ? ` (saw ${s.seen.join(', ')})` : ''}${s.truncated ? ` (${cutShortText(s.path, s.tooLarge ?? [], DEFAULT_MAX_ENTRIES)})` : ''}`).join('; ')}`;
      throw new RemoteRunsError(kind, message, { seen: states.flatMap((s) => s.seen) });
    }
    const now = listing.remoteNow;
    const lines: string[] = [];
    for (const root of listing.roots) {
      if (root.state !== 'ok') {
        lines.push(`${displayName(root.root)}: ${emptyStateText(root.state).title.toLowerCase()}${root.seen.length ? ` (saw: ${root.seen.map(displayName).join(', ')})` : ''}`);
        continue;
      }
      for (const r of root.runs) {
        const newest = latestCheckpoint(r);
        // Names shown through displayName: a tab or newline in a name is escaped, so each run is exactly one row.
        lines.push(`${displayName(r.name)}\t${displayName(r.path)}\t${r.checkpoints.length} checkpoint${r.checkpoints.length === 1 ? '' : 's'}${newest ? `, ${displayName(latestPhrase(newest))} (${formatAge(newest.mtime, now)})` : ''}${r.live ? ', live' : ''}`);
      }
      if (root.truncated) lines.push(`${root.root}: ${cutShortText(root.path, root.tooLarge ?? [], DEFAULT_MAX_ENTRIES)}`);
      // Runs were found, but not everywhere: say where the walk could not go (an unreadable folder, a symlink loop).
      if (root.unreadable) lines.push(`${root.root}: ${unreadableText(root.unreadable)}`);
    }
    return { json: { runs: runs.map(runJson), roots: listing.roots.map(rootJson) }, text: `${lines.join('\n')}\n`, exitCode: 0 };
  }
  // One listing only: the CLI cannot see a checkpoint grow between two listings (the tree can, from its previous
  // listing: core/discovery/growing.ts); it marks what the names, the files and their times say (runTree.ts).
  // The run by its name or more of its path; a last part that is none of that may name one of its checkpoints.
  const { run, listing, note } = await core.resolveRun(addr.host, addr.target, addr.segments ?? [addr.run], 'optional');
  const lines = [`${displayName(run.name)}  ${displayName(run.path)}${run.live ? '  (live)' : ''}`, `metrics: ${run.metrics.map(displayName).join(', ') || 'none'}`];
  const partials: Record<string, { bytesHere: number; bytesTotal: number }> = {};
  for (const c of run.checkpoints) {
    const local = downloads ? await localCopyOf(downloads, run.name, c) : undefined;
    if (local?.kind === 'partial') partials[c.name] = { bytesHere: local.bytesHere, bytesTotal: local.bytesTotal };
    const here = local?.kind === 'downloaded' ? '  downloaded' : local?.kind === 'partial' ? `  partial ${partialPercent(local.bytesHere, local.bytesTotal)} here (pull resumes it)` : '';
    // The first column is the step; a checkpoint without one says what it is instead.
    const first = c.kind === 'step' ? String(c.step) : '-';
    const what = c.kind === 'step' ? '' : `  ${displayName(checkpointLabel(c))}`;
    const pointed = c.pointedBy ? `  named by ${c.pointedBy.map(displayName).join(', ')}` : '';
    lines.push(
      `${first.padStart(10)}  ${displayName(c.name).padEnd(28)} ${formatCheckpointBytes(c).padStart(9)}  ${formatAge(c.mtime, listing.remoteNow)}${c.newest ? '  newest' : ''}${what}${pointed}${c.incomplete ? `  incomplete: ${displayName(c.incomplete)}` : ''}${here}`,
    );
  }
  for (const p of run.pointers ?? []) if (p.note) lines.push(`note: ${p.note}`);
  const skipped = latestSkipped(run).latestSkipped;
  if (skipped) lines.push(`note: ${skippedNote(latestCheckpoint(run)!, skipped)}`);
  if (run.checkpoints.length === 0) lines.push('no checkpoints in this run (it was recognised by its metrics log)');
  const json = runJson(run) as { checkpoints: Record<string, unknown>[] };
  for (const c of json.checkpoints) if (partials[c.name as string]) c.partialDownload = partials[c.name as string];
  return { json: { run: json }, text: `${lines.join('\n')}\n`, exitCode: 0, ...(note ? { note } : {}) };
}
