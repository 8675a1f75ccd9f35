/**
 * The isolated VS Code profile the demo opens: its own user-data-dir and extensions-dir under the demo folder, user
 * settings pointing Remote Runs at the demo host (and nothing else: no hosts from ~/.ssh/config), and a small
 * workspace folder with a note on what to try.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DemoPaths } from './paths';
import type { HostConfig } from '../core/types';

/**
 * Settings that keep a fresh profile quiet: no welcome page, tips, trust prompt, telemetry, update checks or chat
 * prompts. The demo profile and the end-to-end tests' sessions both start from these (nothing may cover the views).
 */
export const QUIET_VSCODE_SETTINGS: Readonly<Record<string, unknown>> = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'security.workspace.trust.enabled': false,
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'extensions.ignoreRecommendations': true,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'chat.disableAIFeatures': true,
  'chat.commandCenter.enabled': false,
  'window.commandCenter': false,
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
};

/** The Remote Runs settings of the demo profile. */
export function demoSettings(paths: DemoPaths, host: HostConfig, evalProfile: Record<string, unknown>): Record<string, unknown> {
  return {
    'remoteRuns.hosts': [host],
    'remoteRuns.useSshConfigHosts': false,
    'remoteRuns.knownHostsFiles': [paths.knownHosts],
    'remoteRuns.evalProfiles': [evalProfile],
    'remoteRuns.refreshIntervalSeconds': 15,
    'remoteRuns.metrics.pollIntervalSeconds': 2,
  };
}

/**
 * Write (or update) the profile. Settings the user changed in the demo profile are kept; the demo's own keys are
 * set again, since the port can change between starts.
 */
export function writeDemoProfile(paths: DemoPaths, settings: Record<string, unknown>): void {
  const file = path.join(paths.vscodeUserData, 'User', 'settings.json');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.mkdirSync(paths.vscodeExtensions, { recursive: true });
  let existing: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) existing = parsed as Record<string, unknown>;
  } catch {
    // first start, or a file that is not plain JSON: start over
  }
  fs.writeFileSync(file, `${JSON.stringify({ ...QUIET_VSCODE_SETTINGS, ...existing, ...settings }, null, 2)}\n`);
  fs.mkdirSync(paths.vscodeWorkspace, { recursive: true });
  fs.writeFileSync(
    path.join(paths.vscodeWorkspace, 'DEMO.md'),
    [
      '# Remote Runs demo',
      '',
      'The **Remote Runs** view (activity bar) shows the demo training host `demo`, a local SSH server started by',
      '`npm run demo`. Things to try:',
      '',
      '- `pct:200` → `workspace`: a run that is training right now. Open its metrics; a new checkpoint appears about',
      '  every two minutes.',
      '- `host` → `checkpoints`: the folder from the story, where `ls checkpoints/*.pt` finds nothing although 12',
      '  checkpoints are there, one level down.',
      '- `host` → `/workspace`: a folder with code and data but no run, and the tree says exactly that.',
      '- `docker:hf-finetune` → `llama-sft`: a Hugging Face Trainer run.',
      '- `pct:201` and `docker:eval-old` are stopped containers.',
      '',
      'Stop the demo with Ctrl-C in the terminal that started it.',
      '',
    ].join('\n'),
  );
}
