import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CommandIds } from '../../src/extension/commandIds';
import { MACHINE_SETTINGS, RESTRICTED_SETTINGS } from '../../src/core/settingsTrust';

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
  // An SSH entry needs its host, a cluster entry (kind: kubernetes) its context: the schema's if/then/else says which.
  assert.deepEqual(item.required, ['name']);
  assert.deepEqual(item.else.required, ['host']);
  assert.deepEqual(item.then.required, ['context']);
});

test('every setting that names a program or a trust file is machine/application scoped and restricted in untrusted workspaces', () => {
  const props = manifest.contributes.configuration.properties as Record<string, { scope?: string; type?: string; markdownDescription?: string; description?: string }>;
  const restricted: string[] = manifest.capabilities.untrustedWorkspaces.restrictedConfigurations;
  assert.equal(manifest.capabilities.untrustedWorkspaces.supported, 'limited');
  assert.ok(manifest.capabilities.untrustedWorkspaces.description.length > 20);
  // The code's list and the manifest's agree both ways.
  assert.deepEqual([...restricted].sort(), [...RESTRICTED_SETTINGS].sort());
  for (const key of MACHINE_SETTINGS) {
    assert.ok(props[key], `${key} is contributed`);
    assert.ok(['machine', 'application'].includes(props[key].scope ?? 'window'), `${key} is machine or application scoped`);
  }
  // Found by what a setting says, so a new one cannot slip in window scoped: a description naming a binary,
  // a program, an executable, a key, known_hosts or an ssh config file.
  const namesProgramOrTrust = /\b(binary|program|executable|known_hosts|client config|ssh config|private key|identity file)\b/i;
  const found: string[] = [];
  for (const [key, p] of Object.entries(props)) {
    if (p.type !== 'string' && p.type !== 'array') continue;
    const text = (p.markdownDescription ?? p.description ?? '').split(' Read from your user')[0];
    if (!namesProgramOrTrust.test(text)) continue;
    found.push(key);
    assert.ok(['machine', 'application'].includes(p.scope ?? 'window'), `${key} names a program or trust file but is ${p.scope ?? 'window'} scoped`);
    assert.ok(restricted.includes(key), `${key} is listed in restrictedConfigurations`);
  }
  // The description rule is not vacuous: it finds the three machine settings by their words.
  assert.deepEqual(found.sort(), [...MACHINE_SETTINGS].sort());
  for (const key of restricted) assert.ok(props[key], `restricted ${key} is a contributed setting`);
});

test('extensionKind is declared: the extension runs where the workspace is', () => {
  assert.deepEqual(manifest.extensionKind, ['workspace']);
});
