/**
 * The one download call of the CLI's `pull` and the extension's Download Checkpoint: lock the destination, plan (what
 * is remote, what is already here), download, and the summary both faces show. The faces only ask
 * (replace a file that differs?) and render progress.
 */
import type { Checkpoint } from '../types';
import { formatBytes } from '../util/format';
import { downloadCheckpoint } from './download';
import { skipText, type PlanDestination } from './plan';
import type { DownloadOptions, DownloadPlan, DownloadResult, FileOutcome, TransferSource, VerifyMode } from './types';

export interface PullOutcome {
  plan: DownloadPlan;
  result: DownloadResult;
  /** Nothing was fetched: every file was already here (or found identical). */
  alreadyThere: boolean;
  /** Files that differ and were kept (the user said no, or nobody could be asked). */
  declined: FileOutcome[];
  resumedBytes: number;
  /** One line for the user: what moved, by what, and how it was checked. */
  summary: string;
}

/** How a download was checked, in words: "verified" only for a comparison of hashes. */
export function verificationText(verify: VerifyMode): string {
  return verify === 'sha256' ? 'verified by SHA-256 on both sides' : 'checked by size only (not verified)';
}

/**
 * `planned`: told of the plan before any byte moves (a face says what it found, e.g. an interrupted download, and
 * names each entry of `plan.skipped` with skippedLines).
 */
export async function pullCheckpoint(
  source: TransferSource,
  checkpoint: Checkpoint,
  dest: PlanDestination,
  options: DownloadOptions = {},
  planned?: (plan: DownloadPlan) => void,
): Promise<PullOutcome> {
  options.onProgress?.({ bytesDone: 0, bytesTotal: 0, bytesPerSec: 0, etaSec: undefined, fileIndex: 0, fileCount: 0, file: '', phase: 'list' });
  const { plan, result } = await downloadCheckpoint(source, checkpoint, dest, options, planned);
  const verify = options.verify ?? 'sha256';
  const declined = result.files.filter((f) => f.outcome === 'declined');
  const resumedBytes = result.files.reduce((n, f) => n + f.resumedBytes, 0);
  const kept = result.files.filter((f) => f.outcome === 'already-complete' || f.outcome === 'identical');
  const alreadyThere = kept.length === result.files.length && result.files.length > 0;
  const how = result.client === 'openssh' ? 'OpenSSH' : result.client === 'kubectl' ? 'kubectl exec' : `the built-in client${result.clientNote ? ` (not OpenSSH: ${result.clientNote})` : ''}`;
  const parts: string[] = [];
  if (alreadyThere) {
    const checks = new Set(kept.filter((f) => f.symlink === undefined).map((f) => f.verified ?? 'size'));
    parts.push(`already there (${checks.has('size') && !checks.has('sha256') ? verificationText('size') : 'verified by SHA-256'}), 0 B fetched`);
  } else {
    parts.push(`${formatBytes(result.bytesFetched)} fetched${resumedBytes ? `, ${formatBytes(resumedBytes)} resumed` : ''} by ${how}, ${verificationText(verify)}`);
  }
  const identical = result.files.filter((f) => f.outcome === 'identical').length;
  if (identical) parts.push(`${identical} local file${identical > 1 ? 's' : ''} found identical by SHA-256 and kept`);
  const replaced = result.files.filter((f) => f.replaced).length;
  if (replaced) parts.push(`${replaced} local file${replaced > 1 ? 's' : ''} that differed replaced`);
  const symlinks = result.files.filter((f) => f.symlink !== undefined && f.outcome !== 'declined').length;
  if (symlinks) parts.push(`${symlinks} symlink${symlinks > 1 ? 's' : ''} within the checkpoint kept as link${symlinks > 1 ? 's' : ''}`);
  const mismatches = result.files.reduce((n, f) => n + (f.hashMismatches ?? 0), 0);
  if (mismatches) parts.push(`${mismatches} range${mismatches > 1 ? 's' : ''} fetched again after a SHA-256 mismatch`);
  // What was left out is part of the answer: "verified" speaks for the files fetched, never for the checkpoint whole.
  const outside = plan.skipped.filter((s) => s.why === 'dir-link-outside');
  const special = plan.skipped.length - outside.length;
  if (special) parts.push(`NOT COMPLETE: ${special} entr${special > 1 ? 'ies' : 'y'} skipped (not regular files, broken links or link loops, named above)`);
  if (outside.length) parts.push(`${outside.length} link${outside.length > 1 ? 's' : ''} to folders outside the checkpoint not followed: ${outside.slice(0, 5).map((s) => `${JSON.stringify(s.relative)} -> ${JSON.stringify(s.link ?? '')}`).join(', ')}${outside.length > 5 ? ` and ${outside.length - 5} more` : ''}`);
  return { plan, result, alreadyThere, declined, resumedBytes, summary: parts.join('; ') };
}

/** One line per entry a pull leaves out (at most `max`, then how many more), for the faces to show before the summary. */
export function skippedLines(plan: Pick<DownloadPlan, 'skipped'>, max = 20): string[] {
  const lines = plan.skipped.slice(0, max).map((s) => `skipped ${JSON.stringify(s.relative)}: ${skipText(s)}`);
  if (plan.skipped.length > max) lines.push(`skipped ${plan.skipped.length - max} more entries (the JSON output lists them all)`);
  return lines;
}
