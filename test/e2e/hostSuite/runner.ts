/**
 * A minimal test runner for inside the extension host: runs named checks in order, logs `ok`/`not ok` lines (they
 * reach the harness through `codeAutomationLog`) and rejects if any failed, which makes the run's exit code 1.
 */

/** A named async check. */
export type HostTest = [name: string, fn: () => Promise<void> | void];

/** Runs every test, then throws one error naming the failures, if any. */
export async function runHostTests(tests: HostTest[]): Promise<void> {
  const failures: string[] = [];
  for (const [name, fn] of tests) {
    try {
      await fn();
      console.log(`ok - ${name}`);
    } catch (e) {
      failures.push(name);
      console.error(`not ok - ${name}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    }
  }
  console.log(`host tests: ${tests.length - failures.length} passed, ${failures.length} failed`);
  if (failures.length) throw new Error(`failed: ${failures.join('; ')}`);
}
