import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CommandIds } from '../../src/extension/commandIds';

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));

test('every command id in code is contributed in package.json, and vice versa', () => {
  const contributed = new Set<string>(manifest.contributes.commands.map((c: { command: string }) => c.command));
  const inCode = new Set<string>(Object.values(CommandIds));
  assert.deepEqual([...inCode].sort(), [...contributed].sort());
});

test('every menu entry names a contributed command', () => {
  const contributed = new Set<string>(manifest.contributes.commands.map((c: { command: string }) => c.command));
  for (const [menu, entries] of Object.entries(manifest.contributes.menus as Record<string, { command: string }[]>)) {
    for (const e of entries) assert.ok(contributed.has(e.command), `${menu} names unknown command ${e.command}`);
  }
});

test('the tree view lives in the Remote Runs view container', () => {
  assert.equal(manifest.contributes.viewsContainers.activitybar[0].title, 'Remote Runs');
  assert.equal(manifest.contributes.views.remoteRuns[0].id, 'remoteRuns.hosts');
  assert.ok(manifest.activationEvents.includes('onView:remoteRuns.hosts'));
});

test('the hosts setting schema rejects a target spec that is not host, pct:<id> or docker:<name>', () => {
  const item = manifest.contributes.configuration.properties['remoteRuns.hosts'].items;
  const pattern = new RegExp(item.properties.targets.oneOf[1].items.pattern);
  assert.ok(pattern.test('pct:200'));
  assert.ok(pattern.test('docker:trainer'));
  assert.ok(pattern.test('host'));
  assert.ok(!pattern.test('pct:abc'));
  assert.ok(!pattern.test('lxc:200'));
  assert.deepEqual(item.required, ['name', 'host']);
});
