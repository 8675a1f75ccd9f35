/**
 * Remote paths in the editor, in a real VS Code (code-server + Chromium) against the real test sshd with the pct
 * shim: a shell script holding the story's command shows the diagnostic (and the fallback hint) in the Problems
 * panel, and its hover says that message once and then the files it summed up; completing a path segment offers
 * the step folders newest first; hovering a checkpoint path says what is there. The extension's language server asks the extension, which lists over the one pooled connection.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { act } from './ui';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { testHostSettings, closeSuite } from './suite';
import { startTestHost, type TestHost } from '../harness/testHost';

let host: TestHost;
let session: VSCodeSession;
let workspace: string;

const STORY = 'ls /workspace/checkpoints/*.pt 2>/dev/null || echo "no checkpoints"';

before(async () => {
  host = await startTestHost();
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-lsp-'));
  writeFileSync(path.join(workspace, 'find_ckpt.sh'), `#!/bin/bash\n# remote-runs: testbox/pct:200\n${STORY}\n`);
  writeFileSync(
    path.join(workspace, 'evaluate.py'),
    `# remote-runs: testbox/pct:200\nimport torch\nstate = torch.load("/workspace/checkpoints/step_${host.storySteps[0]}/checkpoint.pt")\nresume = "/workspace/checkpoints/"\n`,
  );
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      ...testHostSettings(host),
      // Suggestions only when asked, so the test sees the list it asked for.
      'editor.quickSuggestions': { other: false, comments: false, strings: false },
      'editor.hover.delay': 100,
    },
  });
});

after(async () => {
  await closeSuite(session, host, workspace);
});

/** Opens a workspace file from the Explorer and waits for its editor. */
async function openFile(name: string): Promise<void> {
  const { page } = session;
  await page.keyboard.press('Control+Shift+E');
  const row = page.locator('.explorer-folders-view .monaco-list-row', { hasText: name }).first();
  await row.waitFor({ timeout: 120_000 });
  // Generous: on a loaded machine the workbench can take a while to draw; nothing here depends on speed.
  const tab = page.locator(`.tabs-container .tab.active[aria-label^="${name}"]`);
  await act(page, {
    what: `${name} open in the editor`,
    action: async () => {
      if (!(await tab.isVisible())) await row.dblclick();
    },
    effect: () => tab.isVisible(),
  });
  await page.locator('.part.editor .monaco-editor .view-lines').first().waitFor({ timeout: 60_000 });
}

/** Moves the cursor to 1-based line:column with Go to Line. */
async function goTo(line: number, column: number): Promise<void> {
  const { page } = session;
  await page.keyboard.press('Control+G');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: 60_000 });
  // Quick access with `:` is Go to Line; Ctrl+G opens it with the prefix, which fill() replaces.
  await input.fill(`:${line}:${column}`);
  await page.keyboard.press('Enter');
  await input.waitFor({ state: 'hidden', timeout: 60_000 });
}

/** The editor's text, line by line (VS Code renders spaces as non-breaking ones). */
async function editorLines(): Promise<string[]> {
  const lines = await session.page.locator('.part.editor .monaco-editor .view-lines .view-line').evaluateAll((els) =>
    els
      .map((el) => ({ top: parseFloat((el as HTMLElement).style.top || '0'), text: (el.textContent ?? '').replace(/\u00a0/g, ' ') }))
      .sort((a, b) => a.top - b.top)
      .map((l) => l.text),
  );
  return lines;
}

test("the story's command: the Problems panel says it matches nothing and where the checkpoints are", async () => {
  await withArtifactsOnFailure(session, 'lsp-diagnostic', async () => {
    // The Remote Runs view is never opened: opening a shell script activates the extension (onLanguage), and every
    // answer below comes through the language server's own listings.
    await openFile('find_ckpt.sh');
    await session.page.keyboard.press('Control+Shift+M');
    const problems = session.page.locator('.markers-panel');
    const n = host.storySteps.length;
    const expected = `\`/workspace/checkpoints/*.pt\` matches nothing on testbox/pct:200; ${n} checkpoints are in \`step_N/checkpoint.pt\` one level down`;
    const row = problems.locator('.monaco-list-row', { hasText: expected });
    await row.first().waitFor({ timeout: 180_000 });
    assert.match(await row.first().innerText(), /matches nothing on testbox\/pct:200/);
    const hint = problems.locator('.monaco-list-row', { hasText: 'prints "no checkpoints" for every failure alike' });
    await hint.first().waitFor({ timeout: 60_000 });
    // Severity icons: a warning for the glob, information for the fallback.
    assert.equal(await row.first().locator('.codicon-warning').count(), 1);
    assert.equal(await hint.first().locator('.codicon-info').count(), 1);
    // The glob carries a warning squiggle in the editor itself.
    await session.page.locator('.part.editor .monaco-editor .squiggly-warning').first().waitFor({ timeout: 60_000 });
  });
});

test("hovering the story's glob: the diagnostic's message once, then what it summed up (issue 17: it came twice)", async () => {
  await withArtifactsOnFailure(session, 'lsp-diagnostic-hover', async () => {
    await openFile('find_ckpt.sh');
    await goTo(3, 'ls /workspace/check'.length);
    await session.page.keyboard.press('Control+K');
    await session.page.keyboard.press('Control+I');
    const hover = session.page.locator('.monaco-hover:not(.hidden)', { hasText: 'One level down on testbox/pct:200' });
    await hover.first().waitFor({ timeout: 180_000 });
    const text = await hover.first().innerText();
    assert.equal(text.split('matches nothing on testbox/pct:200').length - 1, 1, `the message once: ${text}`);
    const listed = [...text.matchAll(/step_(\d+)\/checkpoint\.pt/g)].map((m) => Number(m[1]));
    assert.deepEqual(listed, [...host.storySteps].sort((a, b) => b - a), `the checkpoints one level down, newest first: ${text}`);
    await session.page.keyboard.press('Escape');
  });
});

test('completing a path segment offers the step folders newest first, with size and age', async () => {
  await withArtifactsOnFailure(session, 'lsp-completion', async () => {
    await openFile('evaluate.py');
    const line = (await editorLines()).findIndex((l) => l.startsWith('resume = '));
    assert.ok(line >= 0, 'the resume line is shown');
    await goTo(line + 1, 'resume = "/workspace/checkpoints/'.length + 1);
    await session.page.keyboard.press('Control+Space');
    const rows = session.page.locator('.editor-widget.suggest-widget .monaco-list-row');
    const newest = `step_${host.storySteps[host.storySteps.length - 1]}`;
    await rows.filter({ hasText: newest }).first().waitFor({ timeout: 180_000 });
    const labels = await session.page.locator('.editor-widget.suggest-widget .monaco-list-row .label-name').allInnerTexts();
    const expected = [...host.storySteps].reverse().map((s) => `step_${s}`);
    assert.deepEqual(labels.slice(0, expected.length), expected.slice(0, labels.length), 'step folders newest first');
    const first = await rows.first().innerText();
    assert.match(first, /3\.2 GB · \d+ min ago · step \d+/, `size and age shown: ${first}`);
    await session.page.keyboard.press('Enter');
    await session.page.keyboard.press('Escape');
    const after = await editorLines();
    assert.equal(after[line], `resume = "/workspace/checkpoints/${newest}/"`);
  });
});

test('hovering a checkpoint path says what it is: file, size, age, its checkpoint and run', async () => {
  await withArtifactsOnFailure(session, 'lsp-hover', async () => {
    await openFile('evaluate.py');
    const line = (await editorLines()).findIndex((l) => l.startsWith('state = '));
    await goTo(line + 1, 'state = torch.load("/workspace/checkpoints/'.length + 3);
    await session.page.keyboard.press('Control+K');
    await session.page.keyboard.press('Control+I');
    const hover = session.page.locator('.monaco-hover-content', { hasText: 'checkpoint.pt' });
    await hover.first().waitFor({ timeout: 180_000 });
    const text = await hover.first().innerText();
    assert.match(text, /file\s+\/workspace\/checkpoints\/step_\d+\/checkpoint\.pt on testbox\/pct:200 · 3\.2 GB · modified \d+ (min|h) ago/);
    assert.match(text, new RegExp(`in checkpoint step_${host.storySteps[0]} \\(step ${host.storySteps[0]}\\) of run workspace`));
  });
});
