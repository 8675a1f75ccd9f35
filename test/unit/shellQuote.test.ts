import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { shellJoin, shellQuote } from '../../src/core/shell/quote';
import { RemoteRunsError } from '../../src/core/types';

/** Names a remote machine or a user can hand us. */
const HOSTILE = [
  '',
  ' ',
  'two words',
  '  leading and trailing  ',
  "it's",
  "'",
  "''",
  '"double"',
  '"',
  "mixed ' and \" quotes",
  '$(id)',
  '${HOME}',
  '$HOME',
  '$',
  '`id`',
  '; echo pwned',
  'a && b',
  'a || b',
  'a | b',
  'a > out',
  '< in',
  'a & b',
  'line1\nline2',
  '\n',
  'trailing newline\n',
  'tab\there',
  'cr\rhere',
  '*',
  '*.pt',
  '?',
  '[ab]',
  '{a,b}',
  '~',
  '~/runs',
  '~root',
  '-n',
  '-e',
  '--help',
  '-',
  'a=b',
  '#not a comment',
  'back\\slash',
  '\\',
  '\\n',
  '!',
  '!!',
  '%s',
  'ünïcødé',
  '日本語/チェックポイント',
  '🚀 emoji',
  '\u00a0nbsp',
  '\u200bzero-width',
  '\x01\x07\x1b[31mcontrol',
  '\x7f',
  "'\\''",
  ')',
  '(',
  'step_10000/checkpoint.pt',
];

const CWD = mkdtempSync(path.join(tmpdir(), 'rr-quote-'));
test.after(() => rmSync(CWD, { recursive: true, force: true }));
// Files a glob would pick up if a `*` escaped its quotes.
for (const f of ['a.pt', 'b.pt', 'out']) writeFileSync(path.join(CWD, f), '');
const SEEDED = ['a.pt', 'b.pt', 'out'];

/** The shells a remote login shell is most likely to be; /bin/sh always, bash and dash when present. */
const SHELLS = ['/bin/sh', '/bin/bash', '/bin/dash'].filter((s, i) => i === 0 || existsSync(s));

/** Run `command` with `shell -c` and return the NUL-separated words it printed. */
function run(shell: string, command: string): Buffer[] {
  const out = execFileSync(shell, ['-c', command], { cwd: CWD, env: { PATH: process.env.PATH, HOME: '/nonexistent-home' } });
  const words: Buffer[] = [];
  let start = 0;
  for (let i = 0; i < out.length; i++) {
    if (out[i] === 0) {
      words.push(out.subarray(start, i));
      start = i + 1;
    }
  }
  assert.equal(start, out.length, 'output ends with a NUL');
  return words;
}

/** The words come back byte-identical to what was quoted. */
function assertRoundTrip(shell: string, args: string[], command: string): void {
  const words = run(shell, command);
  assert.deepEqual(
    words.map((w) => w.toString('hex')),
    args.map((a) => Buffer.from(a, 'utf8').toString('hex')),
    `${shell}: ${JSON.stringify(args)}`,
  );
}

describe('shellQuote', () => {
  test('safe words stay as they are', () => {
    for (const s of ['abc', 'step_10000', '/workspace/run-1/ckpt.pt', 'user@host:22', 'a,b', '100%', 'x+y', '-n']) {
      assert.equal(shellQuote(s), s);
    }
  });

  test('a word with = is quoted, so it can never be read as an assignment', () => {
    assert.equal(shellQuote('A=1'), "'A=1'");
  });

  test('a backslash is written double-quoted, so fish reads it as POSIX shells do', () => {
    assert.equal(shellQuote('a\\b'), `'a'"\\\\"'b'`);
  });

  test('everything else is single-quoted; a single quote is closed, escaped and reopened', () => {
    assert.equal(shellQuote(''), "''");
    assert.equal(shellQuote('two words'), "'two words'");
    assert.equal(shellQuote("it's"), "'it'\\''s'");
    assert.equal(shellQuote('$(id)'), "'$(id)'");
    assert.equal(shellQuote('~'), "'~'");
    assert.equal(shellQuote('*'), "'*'");
    assert.equal(shellQuote('a\nb'), "'a\nb'");
  });

  test('a NUL byte cannot be carried and is an error', () => {
    assert.throws(() => shellQuote('a\0b'), (e: unknown) => e instanceof RemoteRunsError && /NUL/.test(e.message));
    assert.throws(() => shellJoin(['ok', '\0']), RemoteRunsError);
  });

  test('every hostile name is quoted (nothing outside the quotes but escaped single quotes)', () => {
    for (const s of HOSTILE) {
      const q = shellQuote(s);
      if (q === s) assert.match(s, /^[A-Za-z0-9_\-.,:/@%+]+$/, JSON.stringify(s));
      else assert.equal(q.replace(/'[^']*'|\\'|"\\\\"/g, ''), '', JSON.stringify(s));
    }
  });

  test('shellJoin joins quoted words with single spaces', () => {
    assert.equal(shellJoin(['ls', '-la', 'my dir', "it's"]), "ls -la 'my dir' 'it'\\''s'");
    assert.equal(shellJoin([]), '');
  });
});

for (const shell of SHELLS) {
  describe(`through a real ${shell}`, () => {
    test('each hostile name comes back byte-identical as one argument', () => {
      for (const s of HOSTILE) assertRoundTrip(shell, [s], "printf '%s\\0' " + shellJoin([s]));
    });

    test('all of them at once, as the full argv of a command', () => {
      assertRoundTrip(shell, HOSTILE, shellJoin(['printf', '%s\\0', ...HOSTILE]));
    });

    test('arbitrary unicode strings come back byte-identical (property)', () => {
      const word = fc
        .string({ unit: fc.oneof(fc.constantFrom("'", '"', '\\', '$', '`', '\n', ' ', '*', '~', '-', '!'), fc.string({ unit: 'binary', maxLength: 1 })) })
        .filter((s) => !s.includes('\0') && Buffer.from(s, 'utf8').toString('utf8') === s);
      fc.assert(
        fc.property(fc.array(word, { minLength: 1, maxLength: 8 }), (args) => {
          assertRoundTrip(shell, args, "printf '%s\\0' " + shellJoin(args));
        }),
        { numRuns: 60 },
      );
    });

    test('no injected command runs and nothing is globbed, redirected or expanded', () => {
      const canaries = [
        '$(touch CANARY1)',
        '`touch CANARY2`',
        '; touch CANARY3',
        '&& touch CANARY4',
        '| touch CANARY5',
        '\ntouch CANARY6',
        '> CANARY7',
        "'; touch CANARY8; '",
        '"; touch CANARY9; "',
        '$(touch${IFS}CANARY10)',
        "' $(touch CANARY11) '",
        "\\'; touch CANARY12 #",
        "x'\n touch CANARY13 \n'",
        '& touch CANARY14',
        '${x:-$(touch CANARY15)}',
      ];
      // Control: the same payload unquoted does run, so this check can see an injection.
      run(shell, "printf '%s\\0' $(touch CONTROL)");
      assert.ok(existsSync(path.join(CWD, 'CONTROL')));
      rmSync(path.join(CWD, 'CONTROL'));

      const args = [...canaries, '*.pt', '~', '$HOME'];
      assertRoundTrip(shell, args, "printf '%s\\0' " + shellJoin(args));
      assert.deepEqual(readdirSync(CWD).sort(), SEEDED, 'no CANARY file was created');
    });
  });
}
