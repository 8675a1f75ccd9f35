/**
 * The one wildcard matcher (src/core/util/wildcard.ts). The OpenSSH cases follow what match.c does
 * (openbsd/src usr.bin/ssh/match.c rev 1.38: match_pattern, match_pattern_list, match_hostname) and how readconf.c
 * and hostfile.c call it; the glob cases follow glob(3) / sh pathname expansion of one path segment.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  asciiLower,
  globSegmentMatcher,
  hasGlob,
  hasWildcard,
  matchGlobSegment,
  matchHostname,
  matchPattern,
  matchPatternList,
} from '../../src/core/util/wildcard';

test('match_pattern: `*` any run, `?` one character, the rest literal, whole string', () => {
  const yes: [string, string][] = [
    ['gpu1', 'gpu1'],
    ['', ''],
    ['', '*'],
    ['', '**'],
    ['gpu1', '*'],
    ['gpu1', 'gpu*'],
    ['gpu', 'gpu*'], // `*` may be empty
    ['gpu1', '*1'],
    ['gpu1', 'g*1'],
    ['gpu1', '???1'],
    ['gpu1', 'g?u?'],
    ['a.b.example', '*.example'],
    ['a/b', 'a*b'], // `*` crosses `/` and `.`: these are host names, not paths
    ['10.1.2.6', '10.1.*'],
    ['aaa', 'a*a*a'],
    ['abcabd', '*abd'], // the first `ab` is not the one: the star must retry
    ['[gpu1]:2222', '[gpu1]:2222'], // `[` is literal
    ['[gpu1]:2222', '[*]:2222'],
    ['[gpu1]:2222', '[gpu?]:*'],
    ['x\ny', 'x?y'],
  ];
  for (const [s, p] of yes) assert.equal(matchPattern(s, p), true, `${JSON.stringify(s)} ~ ${JSON.stringify(p)}`);
  const no: [string, string][] = [
    ['gpu1', 'gpu'],
    ['gpu', 'gpu?'], // `?` needs a character
    ['', '?'],
    ['gpu1', 'GPU1'], // case-sensitive
    ['gpu1', 'gpu1 '],
    ['xgpu1', 'gpu*'], // anchored at the start
    ['gpu1x', '*gpu1'], // and at the end
    ['gpu1', '[gpu]1'], // no bracket classes in OpenSSH patterns
    ['g', '[g]'],
    ['gpu1', 'gpu\\1'], // no escapes either
    ['a.b', 'a\\.b'],
    ['abcabc', '*abd'],
    ['aa', 'a*a*a'],
  ];
  for (const [s, p] of no) assert.equal(matchPattern(s, p), false, `${JSON.stringify(s)} !~ ${JSON.stringify(p)}`);
});

test('match_pattern agrees with an independent translation to a regular expression', () => {
  const alphabet = fc.constantFrom('a', 'b', '.', '*', '?', '[', ']', '\\', '!', ',');
  const oracle = (s: string, p: string): boolean => {
    const re = [...p].map((c) => (c === '*' ? '[\\s\\S]*' : c === '?' ? '[\\s\\S]' : c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('');
    return new RegExp(`^${re}$`).test(s);
  };
  fc.assert(
    fc.property(fc.array(alphabet, { maxLength: 8 }).map((a) => a.join('')), fc.array(alphabet, { maxLength: 10 }).map((a) => a.join('')), (p, s) => {
      assert.equal(matchPattern(s, p), oracle(s, p), `${JSON.stringify(s)} ~ ${JSON.stringify(p)}`);
    }),
    { numRuns: 2000 },
  );
});

test('match_pattern is linear enough for a hostile pattern (no exponential backtracking)', () => {
  const s = 'a'.repeat(2000);
  assert.equal(matchPattern(s, `${'*a'.repeat(30)}b`), false);
  assert.equal(matchPattern(s, `${'*a'.repeat(30)}`), true);
});

test('match_pattern_list: any positive entry gives 1, a matching negated entry vetoes with -1, else 0', () => {
  assert.equal(matchPatternList('gpu1', 'gpu1', false), 1);
  assert.equal(matchPatternList('gpu1', 'cpu*,gpu*', false), 1);
  assert.equal(matchPatternList('gpu1', 'cpu*,tpu*', false), 0);
  // The veto wins wherever it stands in the list, before or after the positive entry.
  assert.equal(matchPatternList('bad.lab', '*.lab,!bad.lab', false), -1);
  assert.equal(matchPatternList('bad.lab', '!bad.lab,*.lab', false), -1);
  assert.equal(matchPatternList('good.lab', '*.lab,!bad.lab', false), 1);
  // A negated entry that does not match gives no positive match by itself (match.c 1.31 did, and was reverted).
  assert.equal(matchPatternList('good.lab', '!bad.lab', false), 0);
  // Only a leading `!` negates; a second one is literal.
  assert.equal(matchPatternList('!x', '!!x', false), -1);
  assert.equal(matchPatternList('x', '!!x', false), 0);
  assert.equal(matchPatternList('a!', 'a!', false), 1);
  // Spaces are not separators: they are part of the entry.
  assert.equal(matchPatternList('a', 'a, b', false), 1);
  assert.equal(matchPatternList('b', 'a, b', false), 0);
});

test('match_pattern_list: empty entries match only the empty string; a trailing comma and an empty list add none', () => {
  assert.equal(matchPatternList('', '', false), 0);
  assert.equal(matchPatternList('', 'a,', false), 0);
  assert.equal(matchPatternList('', 'a,,b', false), 1);
  assert.equal(matchPatternList('', ',a', false), 1);
  assert.equal(matchPatternList('', '!', false), -1);
  assert.equal(matchPatternList('x', ',', false), 0);
});

test('match_pattern_list lowercases the entries only when asked, and only A–Z; the string is the caller’s', () => {
  assert.equal(matchPatternList('gpu1', 'GPU*', true), 1);
  assert.equal(matchPatternList('gpu1', 'GPU*', false), 0);
  assert.equal(matchPatternList('GPU1', 'gpu*', true), 0, 'the string is not lowercased by match_pattern_list');
  assert.equal(matchPatternList('alice', 'Alice', false), 0, 'Match user is case-sensitive');
  assert.equal(matchPatternList('bad', '*,!BAD', true), -1);
  assert.equal(matchPatternList('é', 'É', true), 0, 'tolower in the C locale leaves non-ASCII alone');
});

test('match_hostname lowercases the host and the entries', () => {
  assert.equal(matchHostname('GPU1.Lab', 'gpu*.lab'), 1);
  assert.equal(matchHostname('gpu1.lab', 'GPU*.LAB'), 1);
  assert.equal(matchHostname('Bastion', '*,!bastion'), -1);
  assert.equal(matchHostname('[gpu1]:2222', '[GPU1]:2222'), 1);
  assert.equal(matchHostname('gpu1', '[gpu1]:2222'), 0, 'a port-22 name is not the bracketed one');
  assert.equal(matchHostname('[gpu1]:2222', 'gpu1'), 0);
  assert.equal(matchHostname('[gpu1]:2222', '[gpu1]:*'), 1);
  assert.equal(asciiLower('ÀbC-Z'), 'Àbc-z');
});

test('hasWildcard: `*` and `?` are OpenSSH wildcards, `[` is not', () => {
  assert.equal(hasWildcard('gpu1'), false);
  assert.equal(hasWildcard('gpu*'), true);
  assert.equal(hasWildcard('gpu?'), true);
  assert.equal(hasWildcard('[gpu1]:2222'), false);
});

test('glob segments: `*` and `?` within the segment, bracket expressions, literal everything else', () => {
  const yes: [string, string][] = [
    ['*.pt', 'checkpoint.pt'],
    ['*.pt', 'pt.pt'],
    ['step_?', 'step_1'],
    ['step_[0-9]*', 'step_100'],
    ['step_[0-9][0-9]', 'step_42'],
    ['[abc]', 'b'],
    ['[a-c]x', 'bx'],
    ['[!0-9]*', 'x1'],
    ['[^0-9]*', 'x1'], // glibc and bash take `^` for `!` too
    ['[]]', ']'], // `]` first is a member
    ['[!]]', 'x'],
    ['[]a]', 'a'],
    ['[a-]', '-'], // a `-` last is a member
    ['[-a]', '-'],
    ['a[', 'a['], // never closed: literal
    ['a[b', 'a[b'],
    ['*[', 'x['],
    ['a.b', 'a.b'],
    ['a+b(c)', 'a+b(c)'], // regular-expression characters are literal
    ['a\\b', 'a\\b'], // so is a backslash (no escapes)
    ['*', 'x\ny'],
    ['.*', '.hidden'],
    ['.hid*', '.hidden'],
  ];
  for (const [p, n] of yes) assert.equal(matchGlobSegment(p, n), true, `${JSON.stringify(n)} ~ ${JSON.stringify(p)}`);
  const no: [string, string][] = [
    ['*.pt', 'step_10000'],
    ['*.PT', 'checkpoint.pt'], // case-sensitive
    ['step_?', 'step_10'],
    ['step_[!0-9]*', 'step_100'],
    ['[^0-9]*', '1x'],
    ['[abc]', 'd'],
    ['[abc]', ''],
    ['[z-a]', 'm'], // a reversed range holds nothing (and does not throw)
    ['[!]]', ']'],
    ['a.b', 'axb'],
    ['a[', 'a'],
    ['*', '.hidden'], // a leading dot must be matched literally
    ['?hidden', '.hidden'],
    ['[.]hidden', '.hidden'],
  ];
  for (const [p, n] of no) assert.equal(matchGlobSegment(p, n), false, `${JSON.stringify(n)} !~ ${JSON.stringify(p)}`);
});

test('glob segments: `*` in a segment is the OpenSSH `*` (one engine), apart from brackets and the leading dot', () => {
  const alphabet = fc.constantFrom('a', 'b', '.', '*', '?', '-', '\\');
  const word = fc.array(alphabet, { maxLength: 8 }).map((a) => a.join(''));
  fc.assert(
    fc.property(word, word, (p, n) => {
      if (n.startsWith('.') && !p.startsWith('.')) return;
      assert.equal(matchGlobSegment(p, n), matchPattern(n, p));
    }),
    { numRuns: 2000 },
  );
});

test('glob segments never throw, whatever the pattern', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 16 }), fc.string({ unit: 'binary', maxLength: 16 }), (p, n) => {
      const m = globSegmentMatcher(p);
      assert.equal(typeof m(n), 'boolean');
      assert.equal(m(n), matchGlobSegment(p, n));
    }),
    { numRuns: 1000 },
  );
});

test('hasGlob: what the shell would expand', () => {
  assert.equal(hasGlob('/workspace/checkpoints/*.pt'), true);
  assert.equal(hasGlob('step_?'), true);
  assert.equal(hasGlob('step_[0-9]'), true);
  assert.equal(hasGlob('/workspace/checkpoints/model.pt'), false);
});
