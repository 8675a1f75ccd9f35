/** The table of CLI error kinds (docs/error-kinds.md) names every kind the core can throw (src/core/types.ts), and no other. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

test('docs/error-kinds.md lists every error kind', () => {
  const types = fs.readFileSync(path.join(ROOT, 'src/core/types.ts'), 'utf8');
  const kinds = new Set<string>();
  for (const name of ['EmptyKind', 'LocalErrorKind', 'TransferErrorKind']) {
    const m = new RegExp(`export type ${name} =([^;]+);`).exec(types);
    assert.ok(m, name);
    for (const k of m[1].matchAll(/'([a-z-]+)'/g)) kinds.add(k[1]);
  }
  assert.ok(kinds.has('busy') && kinds.has('changed') && kinds.size > 15);
  const page = fs.readFileSync(path.join(ROOT, 'docs', 'error-kinds.md'), 'utf8');
  assert.ok(page.includes('Every kind the CLI can print'), 'the page introduces its table');
  const table = page.slice(page.indexOf('Every kind the CLI can print'));
  const rows = table.slice(0, table.indexOf('\n\n', table.indexOf('| kind |')));
  const listed = new Set([...rows.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]));
  for (const k of kinds) assert.ok(listed.has(k), `docs/error-kinds.md's table lacks ${k}`);
  for (const k of listed) assert.ok(kinds.has(k), `docs/error-kinds.md's table lists ${k}, which the core never throws`);
});
