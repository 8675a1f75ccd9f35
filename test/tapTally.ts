/**
 * test/tapTally.ts RUN_DIR...: reads the TAP files that test/repeat.sh saved (RUN_DIR/SUITE.tap, one RUN_DIR per
 * run) and prints, for every test, in how many runs it passed; the tests that failed in any run come first, with the
 * runs they failed in. Exit status 1 when any test failed (or was cancelled) in any run, or a run has no TAP.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

interface Outcome {
  passed: number;
  failed: number;
  skipped: number;
  failedIn: string[];
}

/** Leaf tests of one TAP file (node's reporter: 4 spaces per level), by their path `parent › child`. */
export function leafResults(tap: string): Map<string, 'pass' | 'fail' | 'skip'> {
  const out = new Map<string, 'pass' | 'fail' | 'skip'>();
  const stack: string[] = [];
  const hasChildren: boolean[] = [];
  for (const line of tap.split('\n')) {
    const sub = /^( *)# Subtest: (.*)$/.exec(line);
    if (sub) {
      const depth = sub[1].length / 4;
      stack.length = depth;
      hasChildren.length = depth;
      if (depth > 0) hasChildren[depth - 1] = true;
      stack[depth] = sub[2];
      hasChildren[depth] = false;
      continue;
    }
    const res = /^( *)(not ok|ok) \d+ - (.*?)(?: # (SKIP|TODO)\b.*)?$/.exec(line);
    if (!res) continue;
    const depth = res[1].length / 4;
    const name = [...stack.slice(0, depth), res[3]].join(' › ');
    if (!hasChildren[depth]) out.set(name, res[4] ? 'skip' : res[2] === 'ok' ? 'pass' : 'fail');
    stack.length = depth;
    hasChildren.length = depth;
  }
  return out;
}

function main(runDirs: string[]): number {
  const tally = new Map<string, Outcome>();
  let bad = 0;
  for (const dir of runDirs) {
    const taps = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.tap')).sort() : [];
    if (taps.length === 0) {
      console.log(`${dir}: no TAP output (the run did not get to its tests)`);
      bad++;
    }
    for (const file of taps) {
      const suite = path.basename(file, '.tap');
      for (const [name, r] of leafResults(readFileSync(path.join(dir, file), 'utf8'))) {
        const key = `${suite} › ${name}`;
        const o = tally.get(key) ?? { passed: 0, failed: 0, skipped: 0, failedIn: [] };
        if (r === 'pass') o.passed++;
        else if (r === 'skip') o.skipped++;
        else {
          o.failed++;
          o.failedIn.push(path.basename(dir));
        }
        tally.set(key, o);
      }
    }
  }
  const runs = runDirs.length;
  const rows = [...tally.entries()].sort(([a, x], [b, y]) => y.failed - x.failed || a.localeCompare(b));
  for (const [name, o] of rows) {
    const missing = runs - o.passed - o.failed - o.skipped;
    const notes = [
      o.failed ? `FAILED in ${o.failedIn.join(', ')}` : '',
      o.skipped ? `skipped ${o.skipped}` : '',
      missing > 0 ? `not run in ${missing}` : '',
    ].filter(Boolean);
    console.log(`${o.passed}/${runs}  ${name}${notes.length ? `  (${notes.join('; ')})` : ''}`);
  }
  const flaky = rows.filter(([, o]) => o.failed > 0 || o.passed + o.skipped < runs);
  console.log(`\n${rows.length} tests over ${runs} runs: ${rows.length - flaky.length} passed every run, ${flaky.length} did not`);
  return flaky.length > 0 || bad > 0 ? 1 : 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
