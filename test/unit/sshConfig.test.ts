import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import * as path from 'node:path';
import {
  configuredHostAliases,
  loadSshConfig,
  parseProxyJump,
  parseSshConfig,
  resolveHost,
  type SshConfig,
} from '../../src/core/ssh/sshConfig';
import { RemoteRunsError, type HostConfig } from '../../src/core/types';

const HOME = '/home/me';
const ENV = { home: HOME, localUser: 'me', localHost: 'laptop.lan', vars: { KEYS: '/vault' }, uid: 1000 };

/** Build a config from text with in-memory Include files (pattern → files). */
function cfg(text: string, includes: Record<string, { path: string; text: string }[]> = {}): SshConfig {
  return parseSshConfig(text, { home: HOME, readInclude: (p) => includes[p] ?? [] });
}

function host(h: string, extra: Partial<HostConfig> = {}): HostConfig {
  return { name: h, host: h, ...extra };
}

function resolve(text: string, alias: string, extra: Partial<HostConfig> = {}) {
  return resolveHost(host(alias, extra), cfg(text), ENV);
}

const DEFAULT_KEYS = ['/home/me/.ssh/id_ed25519', '/home/me/.ssh/id_ecdsa', '/home/me/.ssh/id_rsa'];

describe('defaults', () => {
  test('an empty config connects to the alias on port 22 as the local user with the default keys', () => {
    const r = resolve('', 'gpu1');
    assert.deepEqual(r, {
      jumps: [],
      target: { alias: 'gpu1', hostname: 'gpu1', port: 22, user: 'me', identityFiles: DEFAULT_KEYS, identitiesOnly: false },
      // What OpenSSH would be run with if this host needed it: the same file, nothing overridden.
      openssh: { configFile: '/home/me/.ssh/config', overrides: {} },
    });
  });

  test('a missing file is an empty config, not an error', () => {
    const c = loadSshConfig('/nonexistent/dir/config', { home: HOME });
    assert.deepEqual(c.lines, []);
    assert.deepEqual(c.problems, []);
  });
});

describe('syntax', () => {
  test('keywords are case-insensitive; Key=Value, Key = Value and quoted values work; comments are ignored', () => {
    const r = resolve(
      [
        '# a comment',
        '   # an indented comment',
        'HOST gpu1 # trailing comment',
        '  hostname=10.0.0.5',
        '  USER = "deep learner"',
        '\tpOrT\t2222',
        "  IdentityFile '/keys/my key'",
        '  IdentityFile /keys/a\\ b',
        '',
      ].join('\r\n'),
      'gpu1',
    );
    assert.equal(r.target.hostname, '10.0.0.5');
    assert.equal(r.target.user, 'deep learner');
    assert.equal(r.target.port, 2222);
    assert.deepEqual(r.target.identityFiles, ['/keys/my key', '/keys/a b']);
  });

  test('a value ssh rejects makes the file unusable for every host, as `ssh -F` does, naming file and line', () => {
    // Each line and the message beside it checked with OpenSSH 9.2 `ssh -F f -G x`, which then says
    // "terminating, 1 bad configuration options".
    const c = cfg(['Host x', '  Port seventy', '  Port 70000', '  User "unterminated', '  IdentitiesOnly maybe', '  Port 2022', 'Host other'].join('\n'));
    assert.equal(c.fatal.length, 4);
    assert.deepEqual(c.fatal, c.problems);
    assert.match(c.fatal[0], /config:2: Bad port 'seventy'/);
    assert.match(c.fatal[1], /config:3: Bad port '70000'/);
    assert.match(c.fatal[2], /config:4: unterminated quote/);
    assert.match(c.fatal[3], /config:5: IdentitiesOnly/);
    for (const alias of ['x', 'other']) {
      assert.throws(
        () => resolveHost(host(alias), c, ENV),
        (e: unknown) => e instanceof RemoteRunsError && e.kind === 'bad-config' && /config:2: Bad port 'seventy'/.test(e.message),
      );
    }
  });

  test('an unknown keyword is fatal like in ssh, unless IgnoreUnknown names it; a removed one is reported and skipped', () => {
    const bad = cfg('Host x\n  Frobnicate yes');
    assert.match(bad.fatal[0], /config:2: Bad configuration option: Frobnicate/);
    const ignored = cfg('IgnoreUnknown frob*,Other\nHost x\n  Frobnicate yes\n  RSAAuthentication yes\n  HostName h');
    assert.deepEqual(ignored.fatal, []);
    assert.match(ignored.problems[0], /config:3: unknown option Frobnicate, ignored \(IgnoreUnknown\)/);
    assert.match(ignored.problems[1], /config:4: RSAAuthentication is no longer supported by OpenSSH/);
    assert.equal(resolveHost(host('x'), ignored, ENV).target.hostname, 'h');
  });

  test('an OpenSSH option we do not follow is a problem of the hosts it applies to, with file and line', () => {
    const c = cfg('Host a\n  ForwardAgent yes\n  HostName h\nHost b\n  Compression yes\nHost j\n  ServerAliveInterval 5\nHost c\n  ProxyJump j');
    assert.deepEqual(c.problems, []);
    assert.deepEqual(resolveHost(host('a'), c, ENV).configProblems, ['/home/me/.ssh/config:2: ForwardAgent is not honoured by Remote Runs; ignored for a']);
    assert.deepEqual(resolveHost(host('b'), c, ENV).configProblems, ['/home/me/.ssh/config:5: Compression is not honoured by Remote Runs; ignored for b']);
    // A jump host's own lines count too.
    assert.deepEqual(resolveHost(host('c'), c, ENV).configProblems, ['/home/me/.ssh/config:7: ServerAliveInterval is not honoured by Remote Runs; ignored for j']);
    assert.equal(resolveHost(host('zzz'), c, ENV).configProblems, undefined);
    // macOS's own option: Apple's ssh takes it, so it is not fatal, only not followed.
    const mac = cfg('Host *\n  UseKeychain yes');
    assert.deepEqual(mac.fatal, []);
    assert.match(resolveHost(host('m'), mac, ENV).configProblems?.[0] ?? '', /config:2: UseKeychain is not honoured/);
  });

  test('a Match criterion we cannot evaluate is a problem of every host', () => {
    const c = cfg('Match canonical\n  User x\nHost a\n  HostName h');
    assert.match(resolveHost(host('a'), c, ENV).configProblems?.[0] ?? '', /config:1: Match canonical: criterion "canonical" is not supported/);
  });

  test('an explicitly named config file that does not exist is fatal (ssh -F: cannot open user config file)', () => {
    const c = loadSshConfig('/nonexistent/dir/config', { home: HOME, explicit: true });
    assert.match(c.fatal[0], /\/nonexistent\/dir\/config: cannot open/);
    assert.throws(() => resolveHost(host('a'), c, ENV), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'bad-config');
  });
});

describe('Host patterns', () => {
  const text = [
    'Host gpu? !gpu9 lab-*',
    '  User trainer',
    'Host *.internal',
    '  Port 2200',
    'Host !bastion',
    '  IdentitiesOnly yes',
    'Host *',
    '  User fallback',
  ].join('\n');

  test('several patterns per line, * and ?', () => {
    assert.equal(resolve(text, 'gpu1').target.user, 'trainer');
    assert.equal(resolve(text, 'lab-a100').target.user, 'trainer');
    assert.equal(resolve(text, 'gpu10').target.user, 'fallback', '? matches exactly one character');
    assert.equal(resolve(text, 'x.internal').target.port, 2200);
    assert.equal(resolve(text, 'internal').target.port, 22);
  });

  test('a negated match cancels the whole block', () => {
    assert.equal(resolve(text, 'gpu9').target.user, 'fallback');
  });

  test('a Host line with only negated patterns matches nothing (as in OpenSSH)', () => {
    assert.equal(resolve(text, 'gpu1').target.identitiesOnly, false);
    assert.equal(resolve(text, 'bastion').target.identitiesOnly, false);
  });

  test('Host patterns are case-sensitive against the alias, like ssh', () => {
    assert.equal(resolve(text, 'GPU1').target.user, 'fallback');
  });

  test('configuredHostAliases lists only concrete names, once, in order', () => {
    const c = cfg(
      ['Host gpu1 gpu? !gpu9 lab-*', 'Host bastion "with space"', 'Host *', 'Host gpu1 gpu2', 'Match host foo'].join('\n'),
    );
    assert.deepEqual(configuredHostAliases(c), ['gpu1', 'bastion', 'with space', 'gpu2']);
  });
});

describe('first obtained value wins', () => {
  test('the first matching block sets a value; later blocks only fill gaps', () => {
    const r = resolve(
      ['Host gpu1', '  User first', 'Host gpu*', '  User second', '  Port 2201', 'Host *', '  Port 2202', '  HostName never'].join('\n'),
      'gpu1',
    );
    assert.equal(r.target.user, 'first');
    assert.equal(r.target.port, 2201);
    assert.equal(r.target.hostname, 'never');
  });

  test('options before any Host line apply to every host and come first', () => {
    const r = resolve(['User everyone', 'Host gpu1', '  User ignored'].join('\n'), 'gpu1');
    assert.equal(r.target.user, 'everyone');
  });
});

describe('HostName, User, Port, IdentitiesOnly', () => {
  test('HostName expands %h and %% and is lower-cased like ssh does', () => {
    const r = resolve(['Host *.lab', '  HostName %h.Example.COM', 'Host pct%', '  HostName 100%%'].join('\n'), 'n1.lab');
    assert.equal(r.target.hostname, 'n1.lab.example.com');
    assert.equal(r.target.alias, 'n1.lab');
    assert.equal(resolve(['Host pct', '  HostName 100%%'].join('\n'), 'pct').target.hostname, '100%');
  });

  test('IdentitiesOnly yes/no', () => {
    assert.equal(resolve('Host a\n IdentitiesOnly yes', 'a').target.identitiesOnly, true);
    assert.equal(resolve('Host a\n IdentitiesOnly no\nHost *\n IdentitiesOnly yes', 'a').target.identitiesOnly, false);
  });
});

describe('IdentityFile', () => {
  test('several accumulate across blocks in order; ~ and tokens are expanded with the final values', () => {
    const r = resolve(
      [
        'Host gpu1',
        '  HostName 10.1.2.3',
        '  User root',
        '  Port 2222',
        '  IdentityFile ~/.ssh/lab_ed25519',
        '  IdentityFile %d/keys/%r@%h-%p',
        'Host *',
        '  IdentityFile ~/.ssh/id_%u_%n',
        '  IdentityFile ${KEYS}/%l/%L',
        '  IdentityFile ~me/.ssh/same_user',
        '  IdentityFile ~/.ssh/lab_ed25519',
      ].join('\n'),
      'gpu1',
    );
    assert.deepEqual(r.target.identityFiles, [
      '/home/me/.ssh/lab_ed25519',
      '/home/me/keys/root@10.1.2.3-2222',
      '/home/me/.ssh/id_me_gpu1',
      '/vault/laptop.lan/laptop',
      '/home/me/.ssh/same_user',
    ]);
  });

  test('defaults are used only when no IdentityFile is given anywhere', () => {
    assert.deepEqual(resolve('Host other\n IdentityFile /k', 'gpu1').target.identityFiles, DEFAULT_KEYS);
    assert.deepEqual(resolve('Host gpu1\n IdentityFile /k', 'gpu1').target.identityFiles, ['/k']);
  });

  test('an unsupported token or an unset variable is a clear bad-config error', () => {
    assert.throws(() => resolve('Host a\n IdentityFile ~/.ssh/%C', 'a'), (e: unknown) => {
      assert.ok(e instanceof RemoteRunsError);
      assert.equal(e.kind, 'bad-config');
      assert.match(e.message, /%C/);
      return true;
    });
    assert.throws(() => resolve('Host a\n IdentityFile ${NOPE}/k', 'a'), /NOPE is not set/);
  });
});

describe('settings override the ssh config', () => {
  const text = [
    'Host gpu1',
    '  HostName 10.0.0.1',
    '  User cfguser',
    '  Port 2200',
    '  IdentityFile ~/.ssh/cfg_key',
    '  ProxyJump bastion',
    'Host bastion',
    '  HostName bastion.example.com',
  ].join('\n');

  test('user, port and proxyJump from settings win; HostName still comes from the config', () => {
    const r = resolve(text, 'gpu1', { user: 'setuser', port: 22022, proxyJump: 'other:2022' });
    assert.equal(r.target.hostname, '10.0.0.1');
    assert.equal(r.target.user, 'setuser');
    assert.equal(r.target.port, 22022);
    assert.deepEqual(
      r.jumps.map((j) => [j.alias, j.hostname, j.port]),
      [['other', 'other', 2022]],
    );
  });

  test('identityFile from settings is tried first, then the config ones (like ssh -i)', () => {
    assert.deepEqual(resolve(text, 'gpu1', { identityFile: ['~/.ssh/set1', '/abs/set2'] }).target.identityFiles, [
      '/home/me/.ssh/set1',
      '/abs/set2',
      '/home/me/.ssh/cfg_key',
    ]);
    assert.deepEqual(resolve(text, 'other', { identityFile: '~/.ssh/only' }).target.identityFiles, ['/home/me/.ssh/only']);
  });

  test('proxyJump "none" in settings disables the configured ProxyJump', () => {
    assert.deepEqual(resolve(text, 'gpu1', { proxyJump: 'none' }).jumps, []);
  });

  test('a settings user makes `Match user` see it', () => {
    const t = 'Match user deploy\n  Port 2300';
    assert.equal(resolve(t, 'a', { user: 'deploy' }).target.port, 2300);
    assert.equal(resolve(t, 'a').target.port, 22);
  });
});

describe('ProxyJump', () => {
  const text = [
    'Host gpu1',
    '  HostName 10.0.0.1',
    '  ProxyJump jumpuser@bastion:2222,inner,[fd00::5]:2022',
    'Host bastion',
    '  HostName bastion.example.com',
    '  User ignored-because-hop-says-jumpuser',
    '  Port 9999',
    '  IdentityFile ~/.ssh/bastion_key',
    '  IdentitiesOnly yes',
    'Host inner',
    '  HostName 192.168.1.1',
    '  User ops',
    '  ProxyJump ignored-because-not-first-hop',
    'Host *',
    '  IdentityFile ~/.ssh/common',
  ].join('\n');

  test('several hops, each resolved through the ssh config; user@host:port in the hop wins', () => {
    const r = resolve(text, 'gpu1');
    assert.deepEqual(r.jumps, [
      {
        alias: 'bastion',
        hostname: 'bastion.example.com',
        port: 2222,
        user: 'jumpuser',
        identityFiles: ['/home/me/.ssh/bastion_key', '/home/me/.ssh/common'],
        identitiesOnly: true,
      },
      { alias: 'inner', hostname: '192.168.1.1', port: 22, user: 'ops', identityFiles: ['/home/me/.ssh/common'], identitiesOnly: false },
      { alias: 'fd00::5', hostname: 'fd00::5', port: 2022, user: 'me', identityFiles: ['/home/me/.ssh/common'], identitiesOnly: false },
    ]);
    assert.equal(r.target.hostname, '10.0.0.1');
  });

  test("the first hop's own ProxyJump is followed (as ssh does), nearest hop first", () => {
    const r = resolve(
      ['Host gpu1', '  ProxyJump bastion', 'Host bastion', '  ProxyJump outer', 'Host outer', '  HostName outer.example.com'].join('\n'),
      'gpu1',
    );
    assert.deepEqual(
      r.jumps.map((j) => j.hostname),
      ['outer.example.com', 'bastion'],
    );
  });

  test('a ProxyJump loop is a bad-config error, not a hang', () => {
    assert.throws(
      () => resolve(['Host a', '  ProxyJump b', 'Host b', '  ProxyJump a'].join('\n'), 'a'),
      (e: unknown) => e instanceof RemoteRunsError && e.kind === 'bad-config' && /loop: a → b → a/.test(e.message),
    );
  });

  test('ProxyJump none in the config stops a later ProxyJump', () => {
    assert.deepEqual(resolve('Host a\n ProxyJump none\nHost *\n ProxyJump bastion', 'a').jumps, []);
    assert.equal(resolve('Host * !bastion\n ProxyJump bastion', 'a').jumps[0].alias, 'bastion');
    // Without `!bastion` the jump host would jump through itself: ssh fails with "jumphost loop", and so do we.
    assert.throws(() => resolve('Host *\n ProxyJump bastion', 'a'), /loop: a → bastion → bastion.*Host \* !bastion/);
  });

  test('parseProxyJump spellings', () => {
    assert.deepEqual(parseProxyJump('none'), []);
    assert.deepEqual(parseProxyJump('NONE'), []);
    assert.deepEqual(parseProxyJump('h'), [{ host: 'h' }]);
    assert.deepEqual(parseProxyJump('u@h:1,ssh://v@w:2,[::1]:3,[::2],u@me@h2'), [
      { host: 'h', user: 'u', port: 1 },
      { host: 'w', user: 'v', port: 2 },
      { host: '::1', port: 3 },
      { host: '::2' },
      { host: 'h2', user: 'u@me' },
    ]);
    for (const bad of ['a,,b', 'h:0', 'h:99999', 'h:x', '@h', 'fe80::1', '-oProxyCommand=x', 'a b']) {
      assert.throws(() => parseProxyJump(bad), RemoteRunsError, bad);
    }
  });

  test('a bad ProxyJump in the file is fatal, as in ssh ("Invalid ProxyJump")', () => {
    const c = cfg('Host a\n ProxyJump h:0\n ProxyJump ok');
    assert.equal(c.fatal.length, 1);
    assert.match(c.fatal[0], /config:2: ProxyJump "h:0": bad port/);
    assert.throws(() => resolveHost(host('a'), c, ENV), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'bad-config');
  });
});

describe('ProxyCommand', () => {
  test('the `ssh -W %h:%p host` idiom is read as a jump', () => {
    const r = resolve('Host a\n ProxyCommand /usr/bin/ssh -q -l ops -p 2022 -W [%h]:%p bastion\nHost bastion\n HostName b.example', 'a');
    assert.deepEqual(
      r.jumps.map((j) => [j.alias, j.hostname, j.user, j.port]),
      [['bastion', 'b.example', 'ops', 2022]],
    );
    assert.equal(resolve('Host a\n ProxyCommand ssh jumper -W %h:%p', 'a').jumps[0].alias, 'jumper');
  });

  test('any other ProxyCommand is kept for the first hop, tokens expanded and quoted, naming its line; settings\' proxyJump wins', () => {
    const text = "Host a\n  HostName 10.1.2.3\n  User \"o'neil\"\n  ProxyCommand cloudflared access ssh --hostname %h --port %p --as %r --alias %n";
    const r = resolve(text, 'a');
    assert.deepEqual(r.jumps, []);
    assert.deepEqual(r.target.proxyCommand, {
      command: "cloudflared access ssh --hostname 10.1.2.3 --port 22 --as 'o'\\''neil' --alias a",
      where: '/home/me/.ssh/config:4',
    });
    assert.equal(resolve(text, 'a', { proxyJump: 'none' }).target.proxyCommand, undefined);
    assert.deepEqual(resolve('Host a\n ProxyCommand none', 'a').jumps, []);
    assert.equal(resolve('Host a\n ProxyCommand none', 'a').target.proxyCommand, undefined);
    // A jump host's own ProxyCommand: it is the first hop, so it is dialled through the command.
    const viaJump = resolve('Host a\n ProxyJump j\nHost j\n ProxyCommand relay %h', 'a');
    assert.equal(viaJump.jumps[0].proxyCommand?.command, 'relay j');
    assert.equal(viaJump.target.proxyCommand, undefined);
  });

  test('whichever of ProxyJump and ProxyCommand comes first wins', () => {
    assert.equal(resolve('Host a\n ProxyJump j1\n ProxyCommand nc %h %p', 'a').jumps[0].alias, 'j1');
    const r = resolve('Host a\n ProxyCommand nc %h %p\n ProxyJump j1', 'a');
    assert.deepEqual(r.jumps, []);
    assert.equal(r.target.proxyCommand?.command, 'nc a 22');
  });
});

describe('Match', () => {
  test('Match all applies to every host', () => {
    assert.equal(resolve('Host nothing\n User x\nMatch all\n User everyone', 'a').target.user, 'everyone');
  });

  test('Match host sees the HostName obtained so far; originalhost sees the alias; negation and lists work', () => {
    const text = [
      'Host short',
      '  HostName Real.Example.com',
      'Match host *.example.com',
      '  User by-hostname',
      'Match originalhost short,other !host nope',
      '  Port 2001',
      'Match host !real.example.com,*',
      '  IdentitiesOnly yes',
    ].join('\n');
    const r = resolve(text, 'short');
    assert.equal(r.target.user, 'by-hostname');
    assert.equal(r.target.port, 2001);
    assert.equal(r.target.identitiesOnly, false, 'a negated entry in the list cancels the criterion');
    assert.equal(resolve(text, 'zzz').target.identitiesOnly, true);
    assert.equal(resolve(text, 'zzz').target.user, 'me');
  });

  test('Match localuser', () => {
    assert.equal(resolve('Match localuser me\n Port 2', 'a').target.port, 2);
    assert.equal(resolve('Match localuser !me\n Port 2', 'a').target.port, 22);
  });

  test('unsupported criteria (final, canonical…) skip the block and say so; exec is evaluated', () => {
    const c = cfg(['Match exec "test -f /x"', '  User execuser', 'Match canonical all', '  Port 3', 'Match bogus x', '  Port 4', 'Match', '  Port 5', 'Host *', '  User normal'].join('\n'));
    assert.equal(c.problems.length, 3);
    assert.match(c.problems[0], /config:3: Match canonical all: criterion "canonical" is not supported.*block skipped/);
    assert.match(c.problems[1], /unknown criterion "bogus"/);
    const r = resolveHost(host('a'), c, { ...ENV, runMatchExec: () => ({ matched: false }) });
    assert.equal(r.target.user, 'normal');
    assert.equal(r.target.port, 22);
  });
});

describe('Include', () => {
  test('relative to ~/.ssh, conditional inside a Host block, and the includer block continues afterwards', () => {
    const c = cfg(['Host gpu*', '  Include lab.conf', '  IdentityFile /after-include', 'Host *', '  User default'].join('\n'), {
      '/home/me/.ssh/lab.conf': [
        {
          path: '/home/me/.ssh/lab.conf',
          text: ['User labuser', 'Host gpu2', '  Port 2002', 'Host *', '  IdentityFile /from-include'].join('\n'),
        },
      ],
    });
    assert.deepEqual(c.files, ['/home/me/.ssh/config', '/home/me/.ssh/lab.conf']);
    const g1 = resolveHost(host('gpu1'), c, ENV);
    assert.equal(g1.target.user, 'labuser');
    assert.equal(g1.target.port, 22);
    // `Host *` inside the include must not leak out: /after-include is still under `Host gpu*`.
    assert.deepEqual(g1.target.identityFiles, ['/from-include', '/after-include']);
    assert.equal(resolveHost(host('gpu2'), c, ENV).target.port, 2002);
    const other = resolveHost(host('cpu1'), c, ENV);
    assert.equal(other.target.user, 'default', 'lines of an include inside Host gpu* do not apply to cpu1');
    assert.deepEqual(other.target.identityFiles, DEFAULT_KEYS);
  });

  test('without a reader, Include is reported', () => {
    const c = parseSshConfig('Include x', { home: HOME });
    assert.match(c.problems[0], /Include not followed/);
  });

  describe('on disk', () => {
    const home = mkdtempSync(path.join(tmpdir(), 'rr-sshcfg-'));
    test.after(() => rmSync(home, { recursive: true, force: true }));
    const ssh = path.join(home, '.ssh');
    mkdirSync(path.join(ssh, 'conf.d'), { recursive: true });
    mkdirSync(path.join(ssh, 'conf.d', 'adir.conf'));
    mkdirSync(path.join(home, 'elsewhere'));
    writeFileSync(
      path.join(ssh, 'config'),
      [
        'Include conf.d/*.conf',
        'Include ~/elsewhere/extra "~/elsewhere/with space" /nonexistent/*.conf',
        'Include config',
        'Host *',
        '  User fallback',
      ].join('\n'),
    );
    // glob(3) order: 10-gpu before 20-bastion; .hidden.conf and the directory are not config files.
    writeFileSync(path.join(ssh, 'conf.d', '20-bastion.conf'), 'Host bastion\n  HostName bastion.example.com\n  User jump\n');
    writeFileSync(
      path.join(ssh, 'conf.d', '10-gpu.conf'),
      'Host gpu1\n  HostName 10.0.0.1\n  ProxyJump bastion\n  Include ~/elsewhere/nested\n',
    );
    writeFileSync(path.join(ssh, 'conf.d', '.hidden.conf'), 'Host gpu1\n  User hidden\n');
    writeFileSync(path.join(ssh, 'conf.d', 'notes.txt'), 'Host gpu1\n  User txt\n');
    writeFileSync(path.join(home, 'elsewhere', 'nested'), 'IdentityFile ~/.ssh/gpu_key\nInclude ~/elsewhere/nested\n');
    writeFileSync(path.join(home, 'elsewhere', 'extra'), 'Host extra-host\n  Port 2022\n');
    writeFileSync(path.join(home, 'elsewhere', 'with space'), 'Host spaced\n  Port 2023\n');

    test('a conf.d glob, nested includes, quoted names and a recursion guard', () => {
      const c = loadSshConfig(path.join(ssh, 'config'), { home });
      assert.deepEqual(c.files, [
        path.join(ssh, 'config'),
        path.join(ssh, 'conf.d', '10-gpu.conf'),
        path.join(home, 'elsewhere', 'nested'),
        path.join(ssh, 'conf.d', '20-bastion.conf'),
        path.join(home, 'elsewhere', 'extra'),
        path.join(home, 'elsewhere', 'with space'),
      ]);
      assert.equal(c.problems.length, 2, c.problems.join('\n'));
      assert.match(c.problems[0], /nested:2: Include .*nested would include itself again/);
      assert.match(c.problems[1], /config:3: Include .*config would include itself again/);
      const env = { home, localUser: 'me' };
      const r = resolveHost(host('gpu1'), c, env);
      assert.equal(r.target.hostname, '10.0.0.1');
      assert.equal(r.target.user, 'fallback');
      assert.deepEqual(r.target.identityFiles, [path.join(ssh, 'gpu_key')]);
      assert.deepEqual(
        r.jumps.map((j) => [j.hostname, j.user]),
        [['bastion.example.com', 'jump']],
      );
      assert.equal(resolveHost(host('extra-host'), c, env).target.port, 2022);
      assert.equal(resolveHost(host('spaced'), c, env).target.port, 2023);
      assert.deepEqual(configuredHostAliases(c), ['gpu1', 'bastion', 'extra-host', 'spaced']);
    });
  });
});

/**
 * The real OpenSSH client is the reference: `ssh -G -F file alias` prints what ssh would use. These configs
 * avoid what we deliberately do differently (default key list, Match exec), and give every host a key so
 * ssh's unexpanded default list does not appear.
 */
describe('agrees with `ssh -G` (real OpenSSH)', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rr-sshg-'));
  test.after(() => rmSync(dir, { recursive: true, force: true }));
  const me = userInfo();
  const env = { home: me.homedir, localUser: me.username };

  writeFileSync(
    path.join(dir, 'inc.conf'),
    ['User incuser', 'Host other', '  Port 7', 'Host *', '  Port 8', '  IdentityFile /k/inc'].join('\n'),
  );
  const configPath = path.join(dir, 'config');
  writeFileSync(
    configPath,
    [
      'Host web* !web-internal lab?',
      '  User alice',
      '  Port 2200',
      'Host web1',
      '  HostName %h.Example.com',
      '  IdentityFile /k/web1',
      '  ProxyJump jumpy@bast:2222,b2',
      'Host a',
      '  HostName FOO.example.COM',
      `  Include ${path.join(dir, 'inc.conf')}`,
      '  Port 9',
      'Host "q x" d',
      '  User="quoted user"',
      'Match host foo.example.com',
      '  IdentityFile /k/match-host',
      'Match originalhost lab1,d !user bob',
      '  IdentitiesOnly yes',
      'Match !host foo.example.com',
      '  IdentityFile /k/not-foo',
      'Host !e',
      '  User neg',
      'Host f # comment',
      '  User   =  fuser',
      'Host bast',
      '  HostName bastion.example.com',
      '  Port 22',
      'Host *',
      '  IdentityFile /k/all',
      '  User last',
    ].join('\n'),
  );
  const config = loadSshConfig(configPath, { home: me.homedir });

  function sshG(args: string[]): Map<string, string[]> {
    const out = execFileSync('ssh', ['-G', '-F', configPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
    const m = new Map<string, string[]>();
    for (const line of out.split('\n')) {
      const i = line.indexOf(' ');
      if (i < 0) continue;
      const k = line.slice(0, i);
      m.set(k, [...(m.get(k) ?? []), line.slice(i + 1)]);
    }
    return m;
  }

  for (const alias of ['web1', 'web2', 'web-internal', 'lab1', 'a', 'd', 'e', 'f', 'WEB1', 'other', 'bast']) {
    test(alias, () => {
      const g = sshG([alias]);
      assert.deepEqual(config.problems, []);
      const r = resolveHost(host(alias), config, env).target;
      assert.equal(r.hostname, g.get('hostname')?.[0]);
      assert.equal(r.user, g.get('user')?.[0]);
      assert.equal(String(r.port), g.get('port')?.[0]);
      assert.deepEqual(r.identityFiles, g.get('identityfile'));
      assert.equal(r.identitiesOnly ? 'yes' : 'no', g.get('identitiesonly')?.[0]);
      const jumpSpec = g.get('proxyjump')?.[0];
      const jumps = resolveHost(host(alias), config, env).jumps;
      assert.deepEqual(
        jumps.map((j) => j.alias),
        jumpSpec ? parseProxyJump(jumpSpec).map((s) => s.host) : [],
      );
    });
  }

  test('a jump hop is resolved like `ssh -G -l user -p port hop`', () => {
    const [first] = resolveHost(host('web1'), config, env).jumps;
    const g = sshG(['-l', 'jumpy', '-p', '2222', 'bast']);
    assert.equal(first.hostname, g.get('hostname')?.[0]);
    assert.equal(first.user, g.get('user')?.[0]);
    assert.equal(String(first.port), g.get('port')?.[0]);
    assert.deepEqual(first.identityFiles, g.get('identityfile'));
  });

  test('settings user/port/identityFile act like ssh -l/-p/-i', () => {
    // ssh -i drops a key file that does not exist, so give it a real one.
    const key = path.join(dir, 'cli_key');
    writeFileSync(key, '');
    const r = resolveHost(host('web1', { user: 'u2', port: 2345, identityFile: key }), config, env).target;
    const g = sshG(['-l', 'u2', '-p', '2345', '-i', key, 'web1']);
    assert.equal(r.identityFiles[0], key);
    assert.equal(r.user, g.get('user')?.[0]);
    assert.equal(String(r.port), g.get('port')?.[0]);
    assert.deepEqual(r.identityFiles, g.get('identityfile'));
  });
});

describe('Match exec', () => {
  test('tokens are expanded, each value quoted as one shell word; the command runs once per resolution', () => {
    const ran: string[] = [];
    const env = { ...ENV, runMatchExec: (line: string) => (ran.push(line), { matched: line.includes('yes') }) };
    const c = cfg(`Host *\n  HostName 10.0.0.1\nMatch exec "probe %h %n %p %r %u yes"\n  User fromexec\n  Port 2022\nMatch exec "probe %n no"\n  User never`);
    const r = resolveHost(host("it's"), c, env);
    assert.equal(r.target.user, 'fromexec');
    assert.equal(r.target.port, 2022);
    assert.deepEqual(ran, [`probe 10.0.0.1 'it'\\''s' 22 me me yes`, `probe 'it'\\''s' no`]);
  });

  test('a command that cannot finish is a problem of the host, and its block does not apply', () => {
    const env = { ...ENV, runMatchExec: () => ({ matched: false, problem: 'still running after 10 s, stopped' }) };
    const r = resolveHost(host('a'), cfg('Match exec "sleep 100"\n  User x'), env);
    assert.equal(r.target.user, 'me');
    assert.deepEqual(r.configProblems, ['Match exec "sleep 100": still running after 10 s, stopped; block skipped for a']);
  });
});
