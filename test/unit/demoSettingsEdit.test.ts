/**
 * The settings edits of "Try the demo host": the demo host, its known_hosts file and its eval profile go in, and
 * exactly those come out again; the user's own hosts, known_hosts files (including the implicit ~/.ssh/known_hosts)
 * and eval profiles are never lost.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  addsDemoEvalProfile,
  isDemoEvalProfile,
  parseDemoAdditions,
  DEFAULT_KNOWN_HOSTS,
  evalProfilesWithDemo,
  evalProfilesWithoutDemo,
  hostsWithDemo,
  hostsWithoutDemo,
  isDemoHostEntry,
  knownHostsWithDemo,
  knownHostsWithoutDemo,
} from '../../src/extension/demo/demoSettingsEdit';
import type { HostConfig } from '../../src/core/types';
import { demoEvalProfile, demoEvalProfiles } from '../../src/demo/evalProfile';
import { DEMO_SPEC_URL } from '../../src/demo/specServer';
import { parseEvalProfiles } from '../../src/core/eval/profiles';

const KEY = '/home/u/.config/Code/User/globalStorage/remote-runs.remote-runs/demo/keys/client_ed25519';
const KH = '/home/u/.config/Code/User/globalStorage/remote-runs.remote-runs/demo/known_hosts';
const demo = (port: number): HostConfig => ({ name: 'demo', host: '127.0.0.1', port, user: 'root', identityFile: KEY });
const mine: HostConfig = { name: 'kpro6', host: '10.1.2.6', user: 'root' };

test('the demo host is appended to the user\'s hosts; an older demo entry (another port) is replaced, not doubled', () => {
  const once = hostsWithDemo([mine], demo(40001));
  assert.deepEqual(once, [mine, demo(40001)]);
  assert.deepEqual(hostsWithDemo(once, demo(40002)), [mine, demo(40002)]);
  assert.deepEqual(hostsWithDemo(undefined, demo(40001)), [demo(40001)]);
});

test('a user host named "demo" keeps its name and entry; the demo host becomes demo-2 (then demo-3)', () => {
  const theirs: HostConfig = { name: 'demo', host: 'demo.example.com' };
  const theirs2: HostConfig = { name: 'demo-2', host: 'demo2.example.com' };
  const out = hostsWithDemo([theirs, theirs2], demo(40001));
  assert.deepEqual(out, [theirs, theirs2, { ...demo(40001), name: 'demo-3' }]);
  assert.deepEqual(hostsWithoutDemo(out, KEY), [theirs, theirs2], 'removal goes by the key file, not the name');
});

test('removing the demo leaves the user\'s hosts, and no setting at all when the demo was the only host', () => {
  assert.deepEqual(hostsWithoutDemo([mine, demo(1)], KEY), [mine]);
  assert.equal(hostsWithoutDemo([demo(1)], KEY), undefined);
  assert.equal(hostsWithoutDemo(undefined, KEY), undefined);
});

test('an entry is the demo\'s only by its key file (a string or a one-item list)', () => {
  assert.ok(isDemoHostEntry(demo(1), KEY));
  assert.ok(isDemoHostEntry({ ...demo(1), identityFile: [KEY] }, KEY));
  assert.ok(!isDemoHostEntry({ ...demo(1), identityFile: [KEY, '~/.ssh/id_ed25519'] }, KEY));
  assert.ok(!isDemoHostEntry({ name: 'demo', host: '127.0.0.1' }, KEY));
  assert.ok(!isDemoHostEntry(null, KEY));
  assert.ok(!isDemoHostEntry('demo', KEY));
});

test('the demo\'s known_hosts file is added after ~/.ssh/known_hosts when the setting was empty (which meant that file)', () => {
  assert.deepEqual(knownHostsWithDemo(undefined, KH), [DEFAULT_KNOWN_HOSTS, KH]);
  assert.deepEqual(knownHostsWithDemo([], KH), [DEFAULT_KNOWN_HOSTS, KH]);
  assert.deepEqual(knownHostsWithDemo(['/etc/ssh/team_known_hosts'], KH), ['/etc/ssh/team_known_hosts', KH]);
  assert.deepEqual(knownHostsWithDemo(['/a', KH], KH), ['/a', KH], 'not listed twice');
});

test('removing the demo\'s known_hosts file restores what the user had', () => {
  assert.equal(knownHostsWithoutDemo(knownHostsWithDemo(undefined, KH), KH), undefined);
  assert.deepEqual(knownHostsWithoutDemo(knownHostsWithDemo(['/a', '/b'], KH), KH), ['/a', '/b']);
  assert.equal(knownHostsWithoutDemo(undefined, KH), undefined);
});

test('the demo\'s eval profile is added once after the user\'s, never over a user profile of that name, and removed exactly', () => {
  const demoProfile = demoEvalProfile();
  const theirs = { name: 'acceptance', command: 'python eval.py ${checkpoint}' };
  const once = evalProfilesWithDemo([theirs], demoProfile);
  assert.deepEqual(once, [theirs, demoProfile]);
  assert.deepEqual(evalProfilesWithDemo(once, demoProfile), once, 'not added twice');
  const sameName = { name: demoProfile.name, command: 'my own' };
  assert.deepEqual(evalProfilesWithDemo([sameName], demoProfile), [sameName]);
  assert.deepEqual(evalProfilesWithoutDemo([sameName], demoProfile), [sameName], 'a user profile of that name stays');
  assert.deepEqual(evalProfilesWithoutDemo(once, demoProfile), [theirs]);
  assert.equal(evalProfilesWithoutDemo([demoProfile], demoProfile), undefined);
});

test('the demo eval profile is claimed only when this start adds it: not when an identical one or one of that name was there', () => {
  const demo = { name: 'Demo: acceptance length', where: 'target', command: 'sh /opt/demo/eval.sh ${checkpoint} ${step}' };
  assert.equal(addsDemoEvalProfile(undefined, demo), true);
  assert.equal(addsDemoEvalProfile([{ name: 'mine', command: 'x' }], demo), true);
  // Written earlier by `npm run demo` (issue 17: Stop the Demo Host removed it though it had not added it).
  assert.equal(addsDemoEvalProfile([{ ...demo }], demo), false);
  assert.equal(addsDemoEvalProfile([{ name: demo.name, command: 'my own' }], demo), false);
  assert.deepEqual(parseDemoAdditions(JSON.stringify({ evalProfile: true })), { evalProfile: true, serverProfile: false });
  assert.deepEqual(parseDemoAdditions(JSON.stringify({ evalProfile: false, serverProfile: true })), { evalProfile: false, serverProfile: true });
  for (const bad of [undefined, '', '{', 'null', '[]', JSON.stringify({ evalProfile: 'yes', serverProfile: 1 })]) assert.deepEqual(parseDemoAdditions(bad), { evalProfile: false, serverProfile: false });
});

test("the demo's speculative-server profile is recognised by its name, kind and server (it has no command), beside the command one", () => {
  const [command, server] = demoEvalProfiles();
  assert.equal(server.kind, 'speculative-server');
  assert.equal(server.server, DEMO_SPEC_URL, 'the profile names the address the demo host forwards to its drafter server');
  assert.equal(isDemoEvalProfile({ ...server }, server), true);
  assert.equal(isDemoEvalProfile({ ...server }, command), false, 'the server profile is not the command one');
  assert.equal(isDemoEvalProfile({ ...server, server: 'http://10.0.0.5:30000' }, server), false, "a user's copy pointed at their own server is theirs");
  const mine = { kind: 'speculative-server', name: 'mine', server: 'http://10.0.0.5:30000' };
  let profiles: unknown[] | undefined = [mine];
  for (const p of demoEvalProfiles()) profiles = evalProfilesWithDemo(profiles, p);
  assert.deepEqual(profiles, [mine, command, server]);
  assert.equal(addsDemoEvalProfile(profiles, server), false);
  assert.deepEqual(evalProfilesWithoutDemo(profiles, server), [mine, command], 'taking the server profile out leaves the command one');
  // Both validate as the extension reads them: one command profile, one server profile, no problem.
  const parsed = parseEvalProfiles(demoEvalProfiles());
  assert.deepEqual([parsed.profiles.length, parsed.serverProfiles.length, parsed.problems], [1, 1, []]);
});
