/**
 * The isolated VS Code profile the demo opens: its own user-data-dir and extensions-dir under the demo folder,
 * settings pointing Remote Runs at the demo host (and nothing else: no hosts from ~/.ssh/config) and trusting its
 * host key, and a small workspace folder with a note on what to try.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DemoPaths } from './paths';
import type { HostConfig } from '../core/types';
import { findRepoRoot } from './launch';

/**
 * Settings split by the scope the extension's manifest (`<repo>/package.json`) gives them: `machine` ones (which
 * program to run, which known_hosts to trust) and the rest.
 */
export function splitByScope(settings: Record<string, unknown>, repo: string = findRepoRoot()): { user: Record<string, unknown>; machine: Record<string, unknown> } {
  const props = (JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8')) as { contributes: { configuration: { properties: Record<string, { scope?: string }> } } })
    .contributes.configuration.properties;
  const user: Record<string, unknown> = {};
  const machine: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(settings)) (props[k]?.scope === 'machine' ? machine : user)[k] = v;
  return { user, machine };
}

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

/** The Remote Runs settings of the demo profile (`evalProfiles`: the demo's, evalProfile.ts demoEvalProfiles). */
export function demoSettings(paths: DemoPaths, host: HostConfig, evalProfiles: readonly Record<string, unknown>[]): Record<string, unknown> {
  return {
    'remoteRuns.hosts': [host],
    'remoteRuns.useSshConfigHosts': false,
    'remoteRuns.knownHostsFiles': [paths.knownHosts],
    'remoteRuns.evalProfiles': [...evalProfiles],
    'remoteRuns.refreshIntervalSeconds': 15,
    'remoteRuns.metrics.pollIntervalSeconds': 2,
  };
}

/**
 * Write (or update) the profile. Settings the user changed in the demo profile are kept; the demo's own keys are
 * set again, since the port can change between starts. Each setting goes where the editor that opens reads it:
 * everything into the user settings (`User/settings.json`: the desktop VS Code reads `machine`-scoped settings there
 * too), and the `machine`-scoped ones (the known_hosts naming the demo's key) also into `Machine/settings.json`,
 * the only place code-server's extension host, a remote one, reads them; without that the first expand of the demo
 * host asked to trust the demo's own key.
 */
export function writeDemoProfile(paths: DemoPaths, settings: Record<string, unknown>, repo: string = findRepoRoot()): void {
  fs.mkdirSync(paths.vscodeExtensions, { recursive: true });
  const { machine } = splitByScope(settings, repo);
  updateSettingsFile(path.join(paths.vscodeUserData, 'User', 'settings.json'), { ...QUIET_VSCODE_SETTINGS }, settings);
  updateSettingsFile(path.join(paths.vscodeUserData, 'Machine', 'settings.json'), {}, machine);
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
      '  every two minutes. Its checkpoints are real torch.save files: expand or hover one to see its tensors, and',
      '  Compare Checkpoints `step_10000` with `step_12000`, where the model gained a layer.',
      '- Evaluate Checkpoint on the newest checkpoint of `pct:200` → `workspace` with **demo drafter τ (SGLang)**: the',
      '  demo host\'s drafter server (at its 127.0.0.1:30000, reached through the SSH link) serves the newest checkpoint;',
      '  evaluate again after the next save to see τ move. Show Eval Results lists both.',
      '- `host` → `baseline-ref`: a finished run whose checkpoints are Hugging Face sharded safetensors saves.',
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

/** Rewrite a settings file as `defaults`, what it held, then `settings` (each later one wins). */
function updateSettingsFile(file: string, defaults: Record<string, unknown>, settings: Record<string, unknown>): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  let existing: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) existing = parsed as Record<string, unknown>;
  } catch {
    // first start, or a file that is not plain JSON: start over
  }
  fs.writeFileSync(file, `${JSON.stringify({ ...defaults, ...existing, ...settings }, null, 2)}\n`);
}
