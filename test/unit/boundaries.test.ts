/**
 * The code's rooms and their doors, checked on every test run: the core never imports `vscode` or the extension
 * (so it runs in the CLI, the language server and plain node tests); the language server and the CLI import neither
 * `vscode` nor extension code; the webview imports no node-side code. Every import form counts: `from '…'`,
 * `import('…')`, `require('…')`, `export … from '…'`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const SRC = path.join(__dirname, '..', '..', 'src');

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else if (/\.(ts|tsx|mts|cts)$/.test(e.name)) out.push(p);
  }
  return out;
}

/** Every module specifier a file names. */
export function specifiers(text: string): string[] {
  const out: string[] = [];
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)(['"])([^'"\n]+)\1/gm;
  for (let m = re.exec(text); m; m = re.exec(text)) out.push(m[2]);
  return out;
}

/** The room (top folder under src/) a relative specifier lands in, or the package name. */
function destination(file: string, spec: string): string {
  if (!spec.startsWith('.')) return spec.startsWith('node:') ? 'node' : spec.split('/')[0];
  const rel = path.relative(SRC, path.resolve(path.dirname(file), spec));
  return rel.startsWith('..') ? `outside src (${rel})` : `src/${rel.split(path.sep)[0]}`;
}

const RULES: { room: string; forbidden: string[] }[] = [
  { room: 'core', forbidden: ['vscode', 'src/extension', 'src/webview', 'src/cli', 'src/lsp'] },
  { room: 'lsp', forbidden: ['vscode', 'src/extension', 'src/webview'] },
  { room: 'cli', forbidden: ['vscode', 'src/extension', 'src/webview'] },
  { room: 'shared', forbidden: ['vscode', 'src/extension', 'src/core', 'src/cli', 'src/lsp'] },
  { room: 'webview', forbidden: ['vscode', 'src/extension', 'src/core', 'src/cli', 'src/lsp', 'node', 'ssh2'] },
];

test('the specifier reader sees every import form', () => {
  const text = [
    "import * as vscode from 'vscode';",
    'import type { A } from "../extension/x";',
    "export { b } from './b';",
    "const c = await import('../cli/c');",
    "const d = require('node:fs');",
    "import './side-effect';",
  ].join('\n');
  assert.deepEqual(specifiers(text), ['vscode', '../extension/x', './b', '../cli/c', 'node:fs', './side-effect']);
});

for (const rule of RULES) {
  test(`src/${rule.room} imports none of: ${rule.forbidden.join(', ')}`, () => {
    const dir = path.join(SRC, rule.room);
    const files = filesUnder(dir);
    assert.ok(files.length > 0, `src/${rule.room} has files`);
    const breaches: string[] = [];
    for (const f of files) {
      for (const spec of specifiers(fs.readFileSync(f, 'utf8'))) {
        const to = destination(f, spec);
        if (rule.forbidden.includes(to)) breaches.push(`${path.relative(SRC, f)} imports ${spec}`);
      }
    }
    assert.deepEqual(breaches, []);
  });
}

/** Where a pattern may appear in src/: one file owns each job (one settings edge, one `~` expansion). */
const OWNERS: { what: string; pattern: RegExp; owner: string }[] = [
  { what: 'settings reads and writes (getConfiguration)', pattern: /\bgetConfiguration\s*\(/, owner: 'extension/settings.ts' },
  { what: 'expanding a leading ~', pattern: /replace\(\s*\/\^~/, owner: 'core/util/home.ts' },
  { what: 'starting a process (node:child_process)', pattern: /['"](?:node:)?child_process['"]/, owner: 'core/util/processes.ts' },
  { what: 'a cancellation token turned into an abort (onCancellationRequested)', pattern: /\.onCancellationRequested\(/, owner: 'core/util/abort.ts' },
];

for (const { what, pattern, owner } of OWNERS) {
  test(`${what}: only in src/${owner}`, () => {
    const seen = filesUnder(SRC)
      .filter((f) => pattern.test(fs.readFileSync(f, 'utf8')))
      .map((f) => path.relative(SRC, f).split(path.sep).join('/'));
    assert.deepEqual(seen, [owner]);
  });
}

/** The files a file imports (relative specifiers resolved to files under src/), every import form counted. */
function importsOf(file: string): string[] {
  const out: string[] = [];
  for (const spec of specifiers(fs.readFileSync(file, 'utf8'))) {
    if (!spec.startsWith('.')) continue;
    const base = path.resolve(path.dirname(file), spec);
    const hit = [`${base}.ts`, path.join(base, 'index.ts')].find((p) => fs.existsSync(p));
    if (hit) out.push(hit);
  }
  return out;
}

/** The import loops among `files` (Tarjan's strongly connected components of more than one file), as paths below `root`. */
function loopsAmong(files: string[], root: string): string[][] {
  const graph = new Map(files.map((f) => [f, importsOf(f)]));
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const loops: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(path.relative(root, w));
    } while (w !== v);
    if (component.length > 1) loops.push(component.sort());
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return loops;
}

test('no import loops in src/ (a type pointing back up counts: it ties the two files together as much as a value)', () => {
  assert.deepEqual(loopsAmong(filesUnder(SRC), SRC), []);
});

test('the loop finder sees a loop (control: a type import one way, a value import back, beside a file outside it)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-loop-'));
  try {
    fs.writeFileSync(path.join(dir, 'a.ts'), "import type { B } from './b';\nexport const a = 1 as B;\n");
    fs.writeFileSync(path.join(dir, 'b.ts'), "import { a } from './a';\nexport type B = typeof a;\n");
    fs.writeFileSync(path.join(dir, 'c.ts'), "import { a } from './a';\nexport const c = a;\n");
    assert.deepEqual(loopsAmong(filesUnder(dir), dir), [['a.ts', 'b.ts']]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
