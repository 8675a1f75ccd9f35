/**
 * Hostile input for the SSH-side parsers (issue 8): ~/.ssh/config (with Includes), ProxyJump values, known_hosts.
 * Whatever the text, parsing never throws (problems are collected), resolution throws only RemoteRunsError, and
 * nothing grows beyond a linear function of the input: not even a config whose included files include each other.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { parseProxyJump, parseSshConfig, resolveHost } from '../../src/core/ssh/sshConfig';
import { checkHostKey, knownHostsLine, knownKeyTypes } from '../../src/core/ssh/knownHosts';
import { RemoteRunsError } from '../../src/core/types';

const RUNS = 200;
// Random `Match exec` lines must never reach a real shell: each command is recorded and answered "no match".
const execRan: string[] = [];
const env = { home: '/home/u', localUser: 'u', localHost: 'laptop', runMatchExec: (line: string) => (execRan.push(line), { matched: false }) };

const keyword = fc.constantFrom(
  'Host', 'Match', 'Include', 'HostName', 'User', 'Port', 'IdentityFile', 'IdentitiesOnly', 'ProxyJump', 'ProxyCommand',
  'hostname', 'PORT', 'Unknown', '#', '', '=', 'Match all', 'Match exec', 'Match host', 'Match !user',
);
const arg = fc.oneof(
  fc.constantFrom('*', '!*', 'a*', '?', '%h', '%p', '%r', '%%', '%z', '~', '~/x', '"a b"', "'c'", '"open', '\\', '22', '0', '65536', '-1', 'none', 'a@b:1,c', 'ssh://x', '[::1]:2', 'ssh -W %h:%p j', 'a,b,c'),
  fc.string({ unit: 'binary', maxLength: 12 }),
);
const configLine = fc.oneof(
  fc.tuple(keyword, fc.constantFrom(' ', '=', ' = ', '\t', ''), fc.array(arg, { maxLength: 4 })).map(([k, sep, a]) => `${k}${sep}${a.join(' ')}`),
  fc.string({ unit: 'binary', maxLength: 40 }),
);
const configText = fc.array(configLine, { maxLength: 25 }).map((l) => l.join('\n'));

function assertTyped(e: unknown, what: string): void {
  assert.ok(e instanceof RemoteRunsError, `${what} threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
}

test('ssh config: any text parses without throwing; problems and lines are bounded by the lines given', () => {
  fc.assert(
    fc.property(configText, (text) => {
      const config = parseSshConfig(text, { home: env.home });
      const lines = text.split(/\r?\n/).length;
      assert.ok(config.lines.length + config.problems.length <= lines + 1, `${config.lines.length} lines and ${config.problems.length} problems from ${lines} lines`);
    }),
    { numRuns: RUNS },
  );
});

test('ssh config: resolving any host through any config returns or throws RemoteRunsError, with at most 8 hops', () => {
  fc.assert(
    fc.property(configText, fc.oneof(fc.constantFrom('a', 'j', 'x', '*'), fc.string({ maxLength: 8 })), fc.option(fc.oneof(arg, fc.constant('j1,j2')), { nil: undefined }), (text, host, proxyJump) => {
      const config = parseSshConfig(text, { home: env.home });
      try {
        const r = resolveHost({ name: 'h', host: host || 'h', ...(proxyJump !== undefined ? { proxyJump } : {}) }, config, env);
        assert.ok(r.jumps.length <= 8 * 8, `${r.jumps.length} hops`);
        assert.ok(Number.isInteger(r.target.port) && r.target.port > 0 && r.target.port < 65536, `port ${r.target.port}`);
      } catch (e) {
        assertTyped(e, 'resolveHost');
      }
    }),
    { numRuns: RUNS },
  );
});

test('ssh config: ProxyJump values that point at each other end in bad-config, not a hang', () => {
  const text = 'Host a\n  ProxyJump b\nHost b\n  ProxyJump c\nHost c\n  ProxyJump a\n';
  assert.throws(() => resolveHost({ name: 'a', host: 'a' }, parseSshConfig(text, { home: env.home }), env), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'bad-config');
});

test('ssh config: included files that all include each other stay linear (a conf.d/* that includes conf.d/*)', () => {
  // Every file includes the whole folder, as `Include conf.d/*` in each file of conf.d would. Only cycles on
  // the current path are refused, so without a total cap the files read grow as the permutations of the folder.
  for (const count of [3, 6, 9]) {
    const files = Array.from({ length: count }, (_, i) => ({ path: `/home/u/.ssh/conf.d/${i}`, text: `Host h${i}\n  User u${i}\nInclude conf.d/*\n` }));
    let reads = 0;
    const config = parseSshConfig('Include conf.d/*\n', {
      home: env.home,
      readInclude: () => {
        reads++;
        assert.ok(reads <= 10_000, `more than 10,000 Include reads for ${count} files`);
        return files;
      },
    });
    assert.ok(config.lines.length <= 64 * count, `${config.lines.length} config lines kept from ${count} files of one line each`);
    assert.ok(config.files.length <= 64 * count, `${config.files.length} files read for ${count} files`);
  }
});

test('ProxyJump: any value parses to hops or throws bad-config; never more hops than commas', () => {
  fc.assert(
    fc.property(fc.oneof(fc.array(arg, { maxLength: 5 }).map((a) => a.join(',')), fc.string({ unit: 'binary', maxLength: 40 })), (spec) => {
      try {
        const hops = parseProxyJump(spec);
        assert.ok(hops.length <= spec.split(',').length);
        for (const h of hops) {
          assert.ok(h.host.length > 0 && !/\s/.test(h.host) && !h.host.startsWith('-'), `hop host ${JSON.stringify(h.host)}`);
          if (h.port !== undefined) assert.ok(Number.isInteger(h.port) && h.port > 0 && h.port < 65536);
        }
      } catch (e) {
        assertTyped(e, 'parseProxyJump');
        assert.equal((e as RemoteRunsError).kind, 'bad-config');
      }
    }),
    { numRuns: RUNS },
  );
});

// --- known_hosts --------------------------------------------------------------------------------------------

const key = randomBytes(51);
const hashed = (name: string, salt = randomBytes(20)): string => `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`;
const hostField = fc.oneof(
  fc.constantFrom('*', '!*', 'h', '[h]:2222', '[h]:*', 'h,!h', '|1|', '|1|x|y', '|1|||', '|2|a|b', '@revoked', '@cert-authority', '*?*?*?*?*?*?*?*?*?*?b'),
  fc.constant(null).map(() => hashed('[h]:2222')),
  fc.string({ unit: 'binary', maxLength: 16 }),
);
const khLine = fc.oneof(
  fc.tuple(fc.constantFrom('', '@revoked ', '@cert-authority ', '@bogus '), hostField, fc.constantFrom('ssh-ed25519', 'ssh-rsa', ''), fc.constantFrom(key.toString('base64'), 'AAAA', '====', '!!', randomBytes(5).toString('base64'))).map(
    ([m, h, t, k]) => `${m}${h} ${t} ${k}`,
  ),
  fc.string({ unit: 'binary', maxLength: 60 }),
);

test('known_hosts: any file text yields a check result, never an exception', () => {
  fc.assert(
    fc.property(fc.array(khLine, { maxLength: 20 }), fc.constantFrom('h', 'other', ''), fc.constantFrom(22, 2222, 65535), (lines, host, port) => {
      const text = lines.join('\n');
      const files = [{ path: '/kh', text }];
      // A generated line may itself hold a line break: count the file's lines as the reader does.
      const count = text.split(/\r?\n/).length;
      const r = checkHostKey(files, host, port, 'ssh-ed25519', key);
      assert.ok(['match', 'mismatch', 'revoked', 'unknown'].includes(r.status));
      if (r.status !== 'unknown') assert.ok(r.line >= 1 && r.line <= count, `line ${r.line} of ${count}`);
      else assert.ok(r.otherTypes.length <= count);
      assert.ok(knownKeyTypes(files, host, port).length <= count);
    }),
    { numRuns: RUNS },
  );
});

test('known_hosts: a pathological wildcard pattern against a long name finishes (no backtracking blow-up)', () => {
  const pattern = '*a'.repeat(30) + 'b';
  const name = 'a'.repeat(3000);
  const r = checkHostKey([{ path: '/kh', text: `${pattern} ssh-ed25519 ${key.toString('base64')}\n` }], name, 22, 'ssh-ed25519', key);
  assert.equal(r.status, 'unknown');
});

test('known_hosts: hashed entries match only their own host and port, and a line we write reads back as a match', () => {
  fc.assert(
    fc.property(fc.domain(), fc.integer({ min: 1, max: 65535 }), fc.integer({ min: 1, max: 65535 }), (host, port, otherPort) => {
      const text = `${hashed(port === 22 ? host : `[${host}]:${port}`)} ssh-ed25519 ${key.toString('base64')}\n`;
      const files = [{ path: '/kh', text }];
      assert.equal(checkHostKey(files, host, port, 'ssh-ed25519', key).status, 'match');
      assert.equal(checkHostKey(files, host, port, 'ssh-ed25519', randomBytes(51)).status, 'mismatch');
      if (otherPort !== port) assert.equal(checkHostKey(files, host, otherPort, 'ssh-ed25519', key).status, 'unknown');
      const plain = [{ path: '/kh2', text: knownHostsLine(host, port, 'ssh-ed25519', key) + '\n' }];
      assert.equal(checkHostKey(plain, host, port, 'ssh-ed25519', key).status, 'match');
      if (otherPort !== port) assert.equal(checkHostKey(plain, host, otherPort, 'ssh-ed25519', key).status, 'unknown');
    }),
    { numRuns: 100 },
  );
});
