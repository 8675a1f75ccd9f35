/**
 * The test set-ups every suite repeated: a logger that says nothing, and a connection pool to a test host that trusts
 * exactly the host's key and answers no prompt (ScriptedPrompter with no answers). A test that wants to see what was
 * logged or asked passes its own logger or prompter in `options`.
 */
import { ConnectionPool, type PoolOptions } from '../../src/core/ssh/pool';
import type { Logger } from '../../src/core/ssh/types';
import { ScriptedPrompter } from '../harness/testHost';

/** A logger that drops everything. */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/** A pool for the test host whose known_hosts file is `host.knownHostsFile`; anything in `options` overrides. */
export function testPool(host: { knownHostsFile: string }, options: Partial<PoolOptions> = {}): ConnectionPool {
  return new ConnectionPool({ prompter: new ScriptedPrompter(), logger: silentLogger, knownHostsFiles: [host.knownHostsFile], ...options });
}
