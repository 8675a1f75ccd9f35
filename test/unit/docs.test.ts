/**
 * The documentation as its readers meet it: a README short enough to be the Marketplace page, whose quick start is
 * the two commands the quick-start tests run; links between the README, docs/, CONTRIBUTING.md, CHANGELOG.md and
 * bench/README.md that all land on a file and heading that exist; every docs/ page reachable from the README; and
 * no tracked file that speaks of how the project was made instead of what it is (that history is git log's).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';

const ROOT = path.join(__dirname, '..', '..');
const read = (rel: string): string => fs.readFileSync(path.join(ROOT, rel), 'utf8');
const DOC_PAGES = fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
const DOCUMENTS = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', 'bench/README.md', ...DOC_PAGES];

/** GitHub's anchor for a heading: lower case, punctuation dropped (but `-` and `_`), spaces as `-`. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a markdown file's headings (outside code blocks). */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  let inCode = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) inCode = !inCode;
    const h = !inCode && /^#{1,6}\s+(.*)$/.exec(line);
    if (h) out.add(slug(h[1]));
  }
  return out;
}

/** Relative links `[text](target)` of a markdown file, outside code blocks and inline code. */
function relativeLinks(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((t) => !/^[a-z]+:/i.test(t));
}

test('the README is at most 15 KB: it is the Marketplace page', () => {
  const bytes = fs.statSync(path.join(ROOT, 'README.md')).size;
  assert.ok(bytes <= 15_000, `README.md is ${bytes} bytes; move reference material to docs/`);
  assert.ok(bytes > 2_000, 'control: the README says something');
});

test("the README's quick start is the two commands the quick-start tests run", () => {
  const readme = read('README.md');
  const block = /<!-- test: quick-start -->\n```sh\n([\s\S]*?)\n```/.exec(readme);
  assert.ok(block, 'a ```sh block right after <!-- test: quick-start -->');
  const commands = block[1].split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter(Boolean);
  assert.deepEqual(commands, ['npm ci && npm run demo', 'npm ci && npm run setup && npm test']);
  assert.match(readme, /<!-- test: cli-examples -->\n```sh\n(remote-runs |npm |export )/);
});

test('every relative link of the documents lands on a file, and on a heading when it names one', () => {
  let checked = 0;
  for (const doc of DOCUMENTS) {
    for (const target of relativeLinks(read(doc))) {
      const [file, anchor] = target.split('#');
      const resolved = file ? path.normalize(path.join(path.dirname(doc), file)) : doc;
      assert.ok(fs.existsSync(path.join(ROOT, resolved)), `${doc}: link to ${target}: no ${resolved}`);
      if (anchor && resolved.endsWith('.md')) {
        assert.ok(anchors(read(resolved)).has(anchor), `${doc}: link to ${target}: ${resolved} has no heading #${anchor}`);
      }
      checked++;
    }
  }
  assert.ok(checked >= 20, `control: ${checked} links checked`);
});

test('every docs/ page is linked from the README', () => {
  const linked = new Set(relativeLinks(read('README.md')).map((t) => path.normalize(t.split('#')[0])));
  assert.ok(DOC_PAGES.length >= 5, 'control: docs/ has its pages');
  for (const page of DOC_PAGES) assert.ok(linked.has(page), `README.md does not link ${page}`);
});

test('no tracked file speaks of the sessions that made it', () => {
  // Built from parts, so this file does not match itself.
  const session = new RegExp(`\\bsess${'ions?'}\\s+\\d+\\b`, 'i');
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
  assert.ok(files.length > 100, 'control: git lists the tracked files');
  const offenders: string[] = [];
  for (const file of files) {
    const full = path.join(ROOT, file);
    let data: Buffer;
    try {
      if (!fs.statSync(full).isFile() || fs.statSync(full).size > 4_000_000) continue;
      data = fs.readFileSync(full);
    } catch {
      continue; // deleted in the working tree
    }
    if (data.includes(0)) continue; // binary
    const text = data.toString('utf8');
    const m = session.exec(text);
    if (m) offenders.push(`${file}:${text.slice(0, m.index).split('\n').length}: ${m[0]}`);
  }
  assert.deepEqual(offenders, []);
  assert.ok(session.test(`as measured in ${'Sess'}ion 16`), 'control: the pattern finds what it looks for');
});
