import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { HOSTS_JSON_SCHEMA, parseConfigFile, parseHostsSetting } from '../../src/core/config';
import { RemoteRunsError } from '../../src/core/types';

const SRC = 'remoteRuns.hosts';

/** A valid entry with every field, to derive broken variants from. */
function fullEntry(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'gpu box',
    host: 'gpu1.example.com',
    user: 'trainer',
    port: 2222,
    identityFile: ['~/.ssh/lab', '/keys/other'],
    proxyJump: 'jump@bastion:2022,inner',
    targets: ['host', 'pct:200', 'docker:trainer-1'],
    runRoots: ['/workspace', '~/runs'],
    ...over,
  };
}

/** Parse one entry and return its problems. */
function problemsOf(entry: unknown): string[] {
  return parseHostsSetting([entry], SRC).problems;
}

describe('parseHostsSetting', () => {
  test('a full valid entry comes through unchanged', () => {
    const { hosts, problems } = parseHostsSetting([fullEntry(), { name: 'min', host: 'm' }], SRC);
    assert.deepEqual(problems, []);
    assert.deepEqual(hosts, [fullEntry(), { name: 'min', host: 'm' }]);
  });

  test('identityFile as one string, targets "auto"', () => {
    const { hosts } = parseHostsSetting([fullEntry({ identityFile: '~/.ssh/k', targets: 'auto' })], SRC);
    assert.equal(hosts[0].identityFile, '~/.ssh/k');
    assert.equal(hosts[0].targets, 'auto');
  });

  test('unset is an empty list without problems; a non-array is one problem', () => {
    assert.deepEqual(parseHostsSetting(undefined, SRC), { hosts: [], clusters: [], problems: [] });
    assert.deepEqual(parseHostsSetting(null, SRC), { hosts: [], clusters: [], problems: [] });
    const r = parseHostsSetting({ name: 'x', host: 'y' }, SRC);
    assert.deepEqual(r.hosts, []);
    assert.deepEqual(r.problems, ['remoteRuns.hosts: expected an array of hosts, got an object']);
  });

  test('bad entries are skipped and reported with index and field; good ones survive', () => {
    const { hosts, problems } = parseHostsSetting(
      [
        { name: 'ok1', host: 'a' },
        'gpu1',
        { name: 'noport', host: 'b', port: '22' },
        { host: 'c' },
        { name: 'ok2', host: 'd', targets: ['host', 'pct:abc'] },
        { name: 'ok3', host: 'e' },
      ],
      SRC,
    );
    assert.deepEqual(
      hosts.map((h) => h.name),
      ['ok1', 'ok3'],
    );
    assert.equal(problems.length, 4);
    assert.match(problems[0], /^remoteRuns\.hosts\[1\]: expected an object.*got "gpu1"; entry skipped$/);
    assert.match(problems[1], /^remoteRuns\.hosts\[2\]\.port: must be an integer from 1 to 65535, got "22"; entry skipped$/);
    assert.match(problems[2], /^remoteRuns\.hosts\[3\]\.name: is required; entry skipped$/);
    assert.match(problems[3], /^remoteRuns\.hosts\[4\]\.targets\[1\]: A Proxmox container id is a number/);
  });

  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['name not a string', { name: 5 }, /\.name: must be a string, got number 5/],
    ['empty name', { name: '' }, /\.name: must not be empty/],
    ['name with /', { name: 'a/b' }, /\.name: .*contains "\/"/],
    ['name with outer spaces', { name: ' a' }, /\.name: .*leading or trailing spaces/],
    ['host with whitespace', { host: 'a b' }, /\.host: .*whitespace/],
    ['host starting with -', { host: '-oProxyCommand=evil' }, /\.host: .*starts with "-"/],
    ['host with user@', { host: 'root@gpu1' }, /\.host: .*put the user in "user"/],
    ['user with @', { user: 'a@b' }, /\.user: .*not a user name/],
    ['port 0', { port: 0 }, /\.port: must be an integer from 1 to 65535, got number 0/],
    ['port 65536', { port: 65536 }, /\.port:/],
    ['port 22.5', { port: 22.5 }, /\.port:/],
    ['identityFile number', { identityFile: 3 }, /\.identityFile: must be a path or a list of paths/],
    ['identityFile empty entry', { identityFile: ['a', ''] }, /\.identityFile\[1\]: must be a non-empty string/],
    ['proxyJump bad port', { proxyJump: 'b:0' }, /\.proxyJump: ProxyJump "b:0": bad port/],
    ['proxyJump empty hop', { proxyJump: 'a,,b' }, /\.proxyJump: .*empty hop/],
    ['targets string', { targets: 'all' }, /\.targets: must be "auto" or a list/],
    ['targets bad kind', { targets: ['lxc:200'] }, /\.targets\[0\]: Not a target: "lxc:200"/],
    ['targets a pod on an SSH host', { targets: ['pod:ml/train-0:pytorch'] }, /\.targets\[0\]: "pod:ml\/train-0:pytorch" is a pod container: it belongs to a Kubernetes cluster entry/],
    ['targets non-string', { targets: [200] }, /\.targets\[0\]: must be a string like "pct:200", got number 200/],
    ['runRoots string', { runRoots: '/workspace' }, /\.runRoots: must be a list of directories/],
    ['runRoots relative', { runRoots: ['/ok', 'runs'] }, /\.runRoots\[1\]: "runs" must be absolute or start with "~"/],
  ];
  for (const [what, over, re] of cases) {
    test(`rejects ${what}`, () => {
      const problems = problemsOf(fullEntry(over));
      assert.equal(problems.length, 1, problems.join('\n'));
      assert.match(problems[0], /^remoteRuns\.hosts\[0\]\./);
      assert.match(problems[0], re);
      assert.match(problems[0], /entry skipped$/);
    });
  }

  test('duplicate names: the first wins, later ones are reported with both indexes', () => {
    const { hosts, problems } = parseHostsSetting(
      [
        { name: 'gpu', host: 'a' },
        { name: 'GPU', host: 'b' },
        { name: 'gpu', host: 'c' },
      ],
      SRC,
    );
    assert.deepEqual(
      hosts.map((h) => h.host),
      ['a', 'b'],
    );
    assert.deepEqual(problems, ['remoteRuns.hosts[2].name: duplicate name "gpu" (also remoteRuns.hosts[0]); entry skipped']);
  });

  test('unknown fields are reported but the entry is kept, without them', () => {
    const { hosts, problems } = parseHostsSetting([{ name: 'a', host: 'b', hostname: 'typo', identityfile: '/k' }], SRC);
    assert.deepEqual(hosts, [{ name: 'a', host: 'b' }]);
    assert.equal(problems.length, 2);
    assert.match(problems[0], /^remoteRuns\.hosts\[0\]\.hostname: unknown field, ignored/);
    assert.match(problems[1], /identityFile/, 'the message lists the known spelling');
  });

  test('an empty runRoots list means "use the defaults"', () => {
    const { hosts, problems } = parseHostsSetting([{ name: 'a', host: 'b', runRoots: [] }], SRC);
    assert.deepEqual(problems, []);
    assert.equal(hosts[0].runRoots, undefined);
  });

  test('a long hostile value is shortened in the message', () => {
    const [p] = problemsOf({ name: 'a', host: 'b', port: 'x'.repeat(500) });
    assert.ok(p.length < 200, p);
  });
});

describe('host spellings', () => {
  test('"[::1]" is the address ::1, a bare IPv6 address is kept; a port in host is refused saying to use "port"', () => {
    const { hosts, problems } = parseHostsSetting(
      [
        { name: 'a', host: '[::1]' },
        { name: 'b', host: 'fe80::1' },
        { name: 'c', host: '127.0.0.1:2400' },
        { name: 'd', host: '[::1]:2400' },
        { name: 'e', host: 'gpu1:ssh' },
        { name: 'f', host: '[::1' },
      ],
      SRC,
    );
    assert.deepEqual(hosts.map((h) => h.host), ['::1', 'fe80::1']);
    assert.equal(problems.length, 4);
    assert.match(problems[0], /\[2\]\.host: "127\.0\.0\.1:2400" holds a port: write \{"host": "127\.0\.0\.1", "port": 2400\}/);
    assert.match(problems[1], /\[3\]\.host: "\[::1\]:2400" holds a port: write \{"host": "::1", "port": 2400\}/);
    assert.match(problems[2], /"port": N/);
    assert.match(problems[3], /brackets go around a whole IPv6 address/);
  });
});

describe('parseConfigFile', () => {
  function rejects(text: string, re: RegExp): void {
    assert.throws(
      () => parseConfigFile(text, '/etc/rr.json'),
      (e: unknown) => {
        assert.ok(e instanceof RemoteRunsError);
        assert.equal(e.kind, 'bad-config');
        assert.match(e.message, re);
        return true;
      },
    );
  }

  test('reads {"hosts": [...]} (and tolerates $schema)', () => {
    const hosts = parseConfigFile(JSON.stringify({ $schema: './s.json', hosts: [fullEntry()] }), '/etc/rr.json');
    assert.deepEqual(hosts, [fullEntry()]);
  });

  test('invalid JSON names the file', () => rejects('{"hosts": [', /^\/etc\/rr\.json: not valid JSON/));
  test('a bare array is not the expected shape', () => rejects('[]', /expected an object like \{"hosts": \[\.\.\.\]\}, got an array/));
  test('missing hosts', () => rejects('{}', /missing "hosts" array/));
  test('unknown top-level field', () => rejects('{"hosts": [], "host": []}', /unknown top-level field "host"/));
  test('knownHostsFiles, as the setting: a list of paths, anything else refused', () => {
    assert.deepEqual(parseConfigFile(JSON.stringify({ hosts: [], knownHostsFiles: ['~/.ssh/known_hosts', 'kh'] }), '/etc/rr.json'), []);
    rejects('{"hosts": [], "knownHostsFiles": "kh"}', /knownHostsFiles: expected an array of file paths, got/);
    rejects('{"hosts": [], "knownHostsFiles": ["kh", ""]}', /knownHostsFiles: expected an array of file paths/);
  });

  test('any problem in an entry fails the file, listing all of them', () => {
    assert.throws(
      () => parseConfigFile(JSON.stringify({ hosts: [{ name: 'a', host: 'b', port: 0 }, { name: 'c', host: 'd', user: 1 }] }), 'cfg.json'),
      (e: unknown) => {
        assert.ok(e instanceof RemoteRunsError);
        assert.match(e.message, /cfg\.json: hosts\[0\]\.port:/);
        assert.match(e.message, /cfg\.json: hosts\[1\]\.user:/);
        assert.deepEqual((e.detail.problems as string[]).length, 2);
        return true;
      },
    );
  });
});

describe('HOSTS_JSON_SCHEMA', () => {
  const schema = HOSTS_JSON_SCHEMA;

  test('is plain JSON with a description on every field', () => {
    assert.deepEqual(JSON.parse(JSON.stringify(schema)), schema);
    for (const [k, v] of Object.entries(schema.properties)) assert.ok(v.description.length > 10, k);
  });

  test('lists exactly the fields the validator knows (an SSH host\'s and a cluster\'s together)', () => {
    const [p] = problemsOf({ name: 'a', host: 'b', zzz: 1 });
    const ssh = /known: (.*)\)/.exec(p)?.[1].split(', ') ?? [];
    const [q] = problemsOf({ name: 'a', kind: 'kubernetes', context: 'c', zzz: 1 });
    const kube = /known: (.*)\)/.exec(q)?.[1].split(', ') ?? [];
    assert.ok(ssh.includes('host') && !ssh.includes('context') && kube.includes('context') && !kube.includes('host'));
    assert.deepEqual([...new Set([...ssh, ...kube])].sort(), Object.keys(schema.properties).sort());
    // The schema's if/then/else forbids each kind's fields on the other, as the validator reports them.
    const thenOff = Object.keys(schema.then.properties);
    const elseOff = Object.keys(schema.else.properties);
    assert.deepEqual(thenOff.sort(), ssh.filter((f) => !kube.includes(f)).sort());
    assert.deepEqual(elseOff.sort(), kube.filter((f) => !ssh.includes(f)).sort());
  });

  test('its patterns accept and reject what the validator does', () => {
    const samples: Record<string, unknown[]> = {
      name: ['gpu box', 'a', 'a/b', ' a', 'a ', 'ü'],
      host: ['gpu1', '10.0.0.1', 'a b', '-x', 'root@x', 'fd00::1'],
      user: ['root', 'a.b-c', 'a@b', '-o', 'a b', 'a:b'],
    };
    for (const [field, values] of Object.entries(samples)) {
      const re = new RegExp((schema.properties as unknown as Record<string, { pattern: string }>)[field].pattern);
      for (const v of values) {
        const validatorOk = problemsOf(fullEntry({ [field]: v })).length === 0;
        assert.equal(re.test(v as string), validatorOk, `${field} ${JSON.stringify(v)}`);
      }
    }
    const targetRe = new RegExp(schema.properties.targets.oneOf[1].items.pattern);
    for (const t of ['host', 'pct:200', 'docker:x', 'docker:a:b', 'pct:abc', 'pct:', 'lxc:1', 'hosts', '']) {
      const validatorOk = problemsOf(fullEntry({ targets: [t] })).length === 0;
      assert.equal(targetRe.test(t), validatorOk, `target ${JSON.stringify(t)}`);
    }
    const rootRe = new RegExp(schema.properties.runRoots.items.pattern);
    for (const r of ['/w', '~', '~/runs', 'runs', './x']) {
      assert.equal(rootRe.test(r), problemsOf(fullEntry({ runRoots: [r] })).length === 0, r);
    }
  });

  test('package.json contributes the same host fields (copy HOSTS_JSON_SCHEMA there when it changes)', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
    const items = manifest.contributes.configuration.properties['remoteRuns.hosts'].items;
    assert.deepEqual(Object.keys(items.properties).sort(), Object.keys(schema.properties).sort());
    assert.deepEqual(items.required, schema.required);
    // The whole of it, the if/then/else that tells an SSH host from a cluster included.
    assert.deepEqual(items, JSON.parse(JSON.stringify(schema)));
  });
});
