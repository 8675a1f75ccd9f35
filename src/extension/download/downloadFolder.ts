/**
 * The download folder offered the first time a checkpoint is downloaded: outside every workspace, so multi-GB
 * checkpoints never show up in Explorer, in search or in git (issue 17: the first offer was `<workspace>/checkpoints`,
 * saved to the workspace's `.vscode/settings.json`). The platform's downloads folder when it has one
 * (`~/Downloads/remote-runs`), else `~/remote-runs-downloads`. The choice is kept in the user settings. Pure (the
 * home folder and a directory test are passed in), so it is unit-tested.
 */
import * as path from 'node:path';

/** The folder to offer first. */
export function offeredDownloadFolder(home: string, isDirectory: (p: string) => boolean): string {
  const downloads = path.join(home, 'Downloads');
  return isDirectory(downloads) ? path.join(downloads, 'remote-runs') : path.join(home, 'remote-runs-downloads');
}

/** True when `dir` is `folder` or inside it. */
export function isInside(dir: string, folder: string): boolean {
  const rel = path.relative(folder, dir);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}
