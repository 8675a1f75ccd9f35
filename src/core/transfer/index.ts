/**
 * Checkpoint downloads: plan (what is remote, what is already here), then download (lanes of byte ranges into
 * `.part` files, resume, retry, verify, rename). The extension and the CLI's `pull` are thin faces over this.
 *
 * This folder never imports `vscode`.
 */
export { planDownload, buildPlan, localState, checkpointLocalRoot, checkpointToPull, skipText, type PlanDestination } from './plan';
export type { SkippedEntry, SkipReason } from './remoteCommands';
export { download, downloadCheckpoint } from './download';
export { RangeSet, splitRanges, type ByteRange } from './ranges';
export { filePaths, lockPath, STATE_DIR, type FilePaths } from './records';
export { pullCheckpoint, skippedLines, verificationText, type PullOutcome } from './pull';
export { progressText } from './progress';
export { discardPartialDownload, findPartialDownloads, partialPercent, type PartialDownload } from './partials';
export { localCopyOf, type LocalCopy } from './localCopy';
export { transferSourceFor } from './source';
export type {
  ClientChoice,
  DownloadOptions,
  DownloadPlan,
  DownloadProgress,
  DownloadResult,
  FileOutcome,
  LocalState,
  PlanFile,
  TransferSource,
  SshTransferSource,
  PodTransferSource,
  ClosableStreams,
  TransportKind,
  VerifyMode,
} from './types';
