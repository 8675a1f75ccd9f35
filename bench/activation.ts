/**
 * Activation time of the extension in a real VS Code (code-server + Chromium, the e2e toolchain), against an empty
 * extension activated by the same event in the same window.
 *
 *   npm run bench:activation [-- --n 5]
 *
 * Each sample is a fresh code-server with two extensions installed from `.vsix` files: Remote Runs as users get it
 * (the production package) and a baseline whose whole code is `exports.activate = () => {}`, activated on its own
 * when startup finished; then opening the Remote Runs view activates Remote Runs. The figures are VS Code's own, read from "Developer: Show Running Extensions" (code loading + the activate() call, per extension),
 * plus the time Remote Runs spends inside its activate() (its log line). Nothing here judges: it prints medians,
 * the difference and the ratio to the baseline measured in the same windows.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import type { Page } from 'playwright-core';
import { launch } from '../test/e2e/launch';
import { REPO_ROOT } from '../test/e2e/toolchain';
import { extensionVsix, listVsix } from '../test/e2e/vsix';
import { stats, table } from './util';

const BASELINE_NAME = 'Activation Baseline (empty)';
const OURS_NAME = 'Remote Runs';

interface Sample {
  ours: number;
  baseline: number;
  /** Inside Remote Runs' activate(), from its own log line. */
  oursBody: number;
}

/** Packages the empty baseline extension with vsce into `dir`; returns the .vsix path. */
function baselineVsix(dir: string): string {
  const src = path.join(dir, 'baseline');
  mkdirSync(src, { recursive: true });
  writeFileSync(
    path.join(src, 'package.json'),
    JSON.stringify({
      name: 'activation-baseline',
      displayName: BASELINE_NAME,
      description: 'An extension that does nothing, activated in the same window as Remote Runs for comparison.',
      publisher: 'remote-runs-bench',
      version: '0.0.1',
      license: 'MIT',
      engines: { vscode: '^1.90.0' },
      main: './extension.js',
      activationEvents: ['onStartupFinished'],
    }, null, 2),
  );
  writeFileSync(path.join(src, 'extension.js'), 'exports.activate = () => {};\nexports.deactivate = () => {};\n');
  writeFileSync(path.join(src, 'README.md'), '# Activation baseline\n\nAn empty extension for bench/activation.ts.\n');
  writeFileSync(path.join(src, 'LICENSE'), 'MIT\n');
  const out = path.join(dir, 'baseline.vsix');
  execFileSync(path.join(REPO_ROOT, 'node_modules', '.bin', 'vsce'), ['package', '--allow-missing-repository', '-o', out], { cwd: src, stdio: 'pipe' });
  return out;
}

/** One fresh window: open the view, then read both activation times from VS Code's Running Extensions editor. */
async function sample(ours: string, baseline: string, n: number): Promise<Sample> {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'rr-bench-activation-ws-'));
  const l = await launch({ workspaceFolder: workspace, vsix: ours, extraVsix: [baseline], settings: { 'remoteRuns.useSshConfigHosts': false } });
  try {
    const page = l.page;
    // Tall enough that the Running Extensions list renders every row (it is virtualised).
    await page.setViewportSize({ width: 1400, height: 9000 });
    await page.goto(`${l.url}/?folder=${encodeURIComponent(workspace)}`);
    await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 120_000 });
    // The baseline activates first, on its own (onStartupFinished): two extensions activated by one event share the
    // extension host's thread, and the second one's figure would include the first one's loading.
    const baselineMs = await readActivation(page, BASELINE_NAME);
    await page.locator('.part.activitybar a.action-label[aria-label="Remote Runs"]').click({ timeout: 60_000 });
    const body = await waitFor(() => /Remote Runs activated in ([\d.]+) ms/.exec(l.vscodeLogs())?.[1], 'the activation log line');
    const oursMs = await readActivation(page, OURS_NAME);
    const times = { ours: oursMs, baseline: baselineMs };
    process.stderr.write(`sample ${n}: ours ${times.ours} ms, baseline ${times.baseline} ms, inside activate() ${body} ms\n`);
    return { ...times, oursBody: Number(body) };
  } finally {
    await l.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}

/**
 * Opens Running Extensions until it shows `name` activated (the editor draws what it knew when it opened), reads the
 * figure, and closes it again (it is a modal editor that blocks the workbench).
 */
async function readActivation(page: Page, name: string): Promise<number> {
  const giveUp = Date.now() + 180_000;
  for (;;) {
    await runCommand(page, 'Developer: Show Running Extensions');
    await page.locator('.runtime-extensions-editor .extension').first().waitFor({ state: 'visible', timeout: 60_000 });
    let ms: number | undefined;
    for (let i = 0; i < 20 && ms === undefined; i++) {
      ms = await activationMs(page, name);
      if (ms === undefined) await page.waitForTimeout(250);
    }
    await page.keyboard.press('Escape');
    await page.locator('.monaco-modal-editor-block').waitFor({ state: 'hidden', timeout: 30_000 });
    if (ms !== undefined) return ms;
    if (Date.now() > giveUp) throw new Error(`${name} never showed as activated in Running Extensions`);
  }
}

/** "Activation: N ms" of the extension shown as `name` in the Running Extensions editor, once it is there. */
async function activationMs(page: Page, name: string): Promise<number | undefined> {
  const rows = await page.locator('.runtime-extensions-editor .extension').evaluateAll((els) =>
    els.map((e) => [e.querySelector('.name')?.textContent ?? '', e.querySelector('.activation-time')?.textContent ?? '']),
  );
  const m = /Activation: (\d+(?:\.\d+)?)ms/.exec(rows.find(([label]) => label === name)?.[1] ?? '');
  return m ? Number(m[1]) : undefined;
}

async function runCommand(page: Page, title: string): Promise<void> {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-widget .quick-input-list .monaco-list-row').filter({ hasText: title }).first();
  await row.waitFor({ state: 'visible', timeout: 60_000 });
  await row.click({ timeout: 90_000 });
}

async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, limitMs = 120_000): Promise<T> {
  const giveUp = Date.now() + limitMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > giveUp) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { n: { type: 'string', default: '5' } } });
  const n = Number(values.n);
  const loadAtStart = os.loadavg()[0];
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'rr-bench-activation-'));
  try {
    process.stderr.write('packaging Remote Runs (production) and the empty baseline…\n');
    const ours = await extensionVsix();
    const baseline = baselineVsix(tmp);
    const bundle = listVsix(ours).find((e) => e.name === 'extension/dist/extension.js');
    const samples: Sample[] = [];
    for (let i = 1; i <= n; i++) samples.push(await sample(ours, baseline, i));

    const o = stats(samples.map((s) => s.ours));
    const b = stats(samples.map((s) => s.baseline));
    const body = stats(samples.map((s) => s.oursBody));
    const diff = stats(samples.map((s) => s.ours - s.baseline));
    const fmt = (s: ReturnType<typeof stats>): string => `${s.median.toFixed(0)} [${s.min.toFixed(0)}-${s.max.toFixed(0)}]`;
    const out: string[] = [];
    out.push(`Activation in code-server, ${n} fresh windows, median [min-max] ms.`);
    out.push(`Load average (1 min) at start ${loadAtStart.toFixed(2)}, at end ${os.loadavg()[0].toFixed(2)} on ${os.cpus().length} cores: other work on the machine slows every column.`);
    out.push(`Remote Runs bundle: dist/extension.js ${(bundle ? bundle.bytes / 1000 : NaN).toFixed(0)} kB (production, minified).`);
    out.push('');
    out.push(
      table(
        ['', 'VS Code activation (load + activate())', 'inside activate()'],
        [
          ['Remote Runs', fmt(o), fmt(body)],
          ['empty extension (baseline)', fmt(b), '-'],
          ['Remote Runs - baseline', fmt(diff), ''],
          ['Remote Runs / baseline', (o.median / Math.max(1, b.median)).toFixed(1), ''],
        ],
      ),
    );
    console.log(out.join('\n'));
    console.log(JSON.stringify({ bench: 'activation', n, oursMs: o.median, baselineMs: b.median, differenceMs: diff.median, insideActivateMs: body.median, ratio: o.median / Math.max(1, b.median), bundleBytes: bundle?.bytes, load: [loadAtStart, os.loadavg()[0]] }));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.stack : String(e));
  process.exit(1);
});
