/**
 * The one command line every remote command is sent as (shell/portable.ts), run by each real login shell a user
 * may have, as sshd runs it (`$SHELL -c LINE`), with rc files that print: the argv comes back byte-identical after
 * the fence, stdin and the exit status pass through, and no canary runs. Needs Debian's tcsh and fish
 * zsh and busybox (`npm run setup` installs them).
 */
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { wrapForTarget } from '../../src/core/targets';
import { shellJoin } from '../../src/core/shell/quote';
import { FENCE, fenceSkipper, missingTool, portableCommandLine, shellRefused, unfence } from '../../src/core/shell/portable';
import { LIST_SCRIPT } from '../../src/core/discovery/listScript';
import type { ExecResult } from '../../src/core/remote';

const BUSYBOX = ['/usr/bin/busybox', '/bin/busybox'].find((p) => existsSync(p));
/** [name, argv that runs `-c LINE`]; tcsh, csh, fish and zsh must be installed (test/setup.sh). */
const SHELLS: [string, string[]][] = [
  ['sh', ['/bin/sh']],
  ['bash', ['/bin/bash']],
  ['dash', ['/bin/dash']],
  ['tcsh', ['/usr/bin/tcsh']],
  ['csh', ['/usr/bin/csh']],
  ['fish', ['/usr/bin/fish']],
  ['zsh', ['/usr/bin/zsh']],
  ...(BUSYBOX ? [['busybox sh', [BUSYBOX, 'sh']] as [string, string[]]] : []),
];

const ARGS = [
  '',
  'two words',
  "it's",
  '"double"',
  '$(touch CANARY1)',
  '`touch CANARY2`',
  '; touch CANARY3',
  '\ntouch CANARY4\n',
  'line1\nline2',
  '!',
  '!!',
  '!touch',
  '%s %% %b',
  'back\\slash',
  '\\',
  "\\'",
  '\\\\',
  '~',
  '*',
  '$HOME',
  '#comment',
  'ünïcødé 训练 🚀',
  '\x01\x07\x1b[31m\r\t\x7f',
];

const CWD = mkdtempSync(path.join(tmpdir(), 'rr-portable-'));
const HOME = path.join(CWD, 'home');
const WORK = path.join(CWD, 'work');
after(() => rmSync(CWD, { recursive: true, force: true }));
mkdirSync(path.join(HOME, '.config', 'fish'), { recursive: true });
mkdirSync(WORK);
writeFileSync(path.join(WORK, 'a.pt'), '');
// rc files that print on stdout and stderr, as module systems and cluster banners do (csh/tcsh read ~/.cshrc or
// ~/.tcshrc for every `-c`, fish its config.fish).
const NOISE = 'Welcome to GPU node 7! quota: 93%';
writeFileSync(path.join(HOME, '.tcshrc'), `echo '${NOISE}'\necho 'rc on stderr' > /dev/stderr\n`);
writeFileSync(path.join(HOME, '.cshrc'), `echo '${NOISE}'\n`);
writeFileSync(path.join(HOME, '.config', 'fish', 'config.fish'), `echo '${NOISE}'\necho 'rc on stderr' >&2\n`);
writeFileSync(path.join(HOME, '.zshenv'), `echo '${NOISE}'\n`);

function exec(shell: string[], line: string, input?: string): ExecResult {
  const r = spawnSync(shell[0], [...shell.slice(1), '-c', line], { cwd: WORK, input, env: { PATH: process.env.PATH, HOME }, timeout: 20_000 });
  assert.ok(!r.error, String(r.error));
  return { stdout: r.stdout, stderr: r.stderr, code: r.status, ...(r.signal ? { signal: r.signal } : {}), truncated: false };
}

function words(out: Buffer): string[] {
  const parts: string[] = [];
  let start = 0;
  for (let i = 0; i < out.length; i++) {
    if (out[i] === 0) {
      parts.push(out.subarray(start, i).toString('hex'));
      start = i + 1;
    }
  }
  assert.equal(start, out.length, `output ends with a NUL: ${JSON.stringify(out.toString())}`);
  return parts;
}

const hex = (args: string[]): string[] => args.map((a) => Buffer.from(a, 'utf8').toString('hex'));

for (const [name, shell] of SHELLS) {
  describe(`as the login shell: ${name}`, () => {
    test('exists on this machine (npm run setup installs tcsh, fish, zsh, busybox)', () => {
      assert.ok(existsSync(shell[0]), `${shell[0]} is missing: apt-get install -y tcsh fish zsh busybox`);
    });

    test('every hostile argument comes back byte-identical after the fence, and no canary runs', () => {
      const r = exec(shell, wrapForTarget({ kind: 'host', id: '' }, ['printf', '%s\\0', ...ARGS]));
      assert.equal(r.code, 0, r.stderr.toString());
      assert.ok(!shellRefused(r));
      // The shells that read an rc file for every `-c` did print (bash reads ~/.bashrc only when sshd runs it).
      if (['tcsh', 'csh', 'fish', 'zsh'].includes(name)) assert.ok(r.stdout.includes(NOISE), `${name} read its rc file`);
      const own = unfence(r);
      assert.deepEqual(words(own.stdout), hex(ARGS));
      assert.equal(own.stderr.length, 0, `stderr after the fence is the command's own: ${JSON.stringify(own.stderr.toString())}`);
      assert.deepEqual(readdirSync(WORK), ['a.pt'], 'no CANARY file was created');
    });

    test('arbitrary strings come back byte-identical (property)', () => {
      const word = fc
        .string({ unit: fc.oneof(fc.constantFrom("'", '"', '\\', '$', '`', '\n', ' ', '*', '~', '-', '!', '%'), fc.string({ unit: 'binary', maxLength: 1 })) })
        .filter((s) => !s.includes('\0') && Buffer.from(s, 'utf8').toString('utf8') === s);
      fc.assert(
        fc.property(fc.array(word, { minLength: 1, maxLength: 6 }), (args) => {
          const r = exec(shell, wrapForTarget({ kind: 'host', id: '' }, ['printf', '%s\\0', ...args]));
          assert.deepEqual(words(unfence(r).stdout), hex(args));
        }),
        { numRuns: 15 },
      );
    });

    test('stdin reaches the command, and its exit status is the result', () => {
      const r = exec(shell, wrapForTarget({ kind: 'host', id: '' }, ['sh', '-c', 'cat; exit 7']), 'stdin bytes\n');
      assert.equal(r.code, 7);
      assert.equal(unfence(r).stdout.toString(), 'stdin bytes\n');
    });

    test('the multi-line listing script runs (it reaches its own magic)', () => {
      const r = exec(shell, wrapForTarget({ kind: 'host', id: '' }, ['sh', '-c', LIST_SCRIPT, 'sh', 'list', '2', '10', WORK]));
      assert.equal(r.code, 0, r.stderr.toString());
      assert.equal(unfence(r).stdout.subarray(0, 12).toString('latin1'), '\0@rr-list@3\0');
    });
  });
}

test('a POSIX-quoted line alone (the old way) fails in tcsh and fish: the reason for the wrapper', () => {
  const line = shellJoin(['printf', '%s\\0', 'line1\nline2', 'back\\slash']);
  assert.match(exec(['/usr/bin/tcsh'], line).stderr.toString(), /Unmatched/);
  const multi = shellJoin(['sh', '-c', LIST_SCRIPT, 'sh', 'list', '2', '10', WORK]);
  assert.notEqual(exec(['/usr/bin/tcsh'], multi).code, 0);
});

test('the rc noise before the fence is dropped, and a fence split over chunks is found', () => {
  const got: Buffer[] = [];
  const push = fenceSkipper((b: Buffer) => void got.push(Buffer.from(b)));
  const all = Buffer.concat([Buffer.from(`${NOISE}\n\0rr`), FENCE, Buffer.from('payload')]);
  for (let i = 0; i < all.length; i++) push(all.subarray(i, i + 1));
  assert.equal(Buffer.concat(got).toString(), 'payload');
});

test("a login shell that never ran the command (nologin) is refused with its own words", () => {
  const r: ExecResult = { stdout: Buffer.from('This account is closed: ask hpc-help@example.org\n'), stderr: Buffer.alloc(0), code: 1, truncated: false };
  const e = shellRefused(r);
  assert.equal(e?.kind, 'command-failed');
  assert.match(e!.message, /login shell did not run the command \(exit code 1\): This account is closed: ask hpc-help@example\.org/);
  assert.equal(shellRefused({ ...r, stdout: Buffer.concat([r.stdout, FENCE]) }), undefined);
});

test('cost: the listing command grows by less than 40% on the wire (8.9 KB to 11.8 KB)', () => {
  const plain = shellJoin(['sh', '-c', LIST_SCRIPT]).length;
  const wrapped = portableCommandLine(shellJoin(['sh', '-c', LIST_SCRIPT])).length;
  assert.ok(wrapped < plain * 1.4, `${plain} → ${wrapped} bytes`);
});

test('a missing tool is named from each shell\'s own words, the wrapper\'s eval included', () => {
  for (const sh of ['/bin/sh', '/bin/bash', ...(BUSYBOX ? [BUSYBOX] : [])]) {
    const argv = sh === BUSYBOX ? [BUSYBOX, 'sh'] : [sh];
    for (const line of [wrapForTarget({ kind: 'host', id: '' }, ['no-such-tool-rr', 'x']), wrapForTarget({ kind: 'host', id: '' }, ['sh', '-c', 'no-such-tool-rr x; exit 0'])]) {
      const r = unfence(exec(argv, line));
      assert.equal(missingTool(r), 'no-such-tool-rr', `${sh}: ${r.stderr.toString()}`);
    }
  }
  assert.equal(missingTool({ stdout: Buffer.alloc(0), stderr: Buffer.from('find: /x: No such file or directory\n'), code: 1, truncated: false }), undefined);
});
