/**
 * Transport benchmark: what a command costs over the OpenSSH transport (src/core/ssh/opensshConnection.ts: one
 * ControlMaster, each command a `ssh` mux client) against the built-in ssh2 connection, to the same sshd on
 * 127.0.0.1, both connected and warm, in the same run. Per command kind it prints the median and min of each and the
 * ratio OpenSSH / ssh2 (medians), samples interleaved (ssh2, OpenSSH, ssh2, …) so drift hits both alike:
 *  1. a small command (`true`): the fixed cost of one command;
 *  2. the listing bench's list script over 50 runs × 100 checkpoints (bench/listing.ts's tree);
 *  3. a metrics tail read of 256 KiB of a train.jsonl, and a follow poll that finds nothing new (stat only).
 * Every result is checked against the other transport's (same stdout); timing is never judged. The last stdout line
 * is a one-line JSON summary.
 *
 * Run: `node --import tsx bench/transport.ts [--n 30] [--runs 50] [--ckpts 100]` (as root: the harness creates the
 * test user and starts sshd).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { HostDirectory } from '../src/core/hosts';
import { SshConnection } from '../src/core/ssh/connection';
import { OpenSshConnection } from '../src/core/ssh/opensshConnection';
import type { Transport } from '../src/core/ssh/transport';
import { listRunsCommand } from '../src/core/discovery/listScript';
import { tailReadCommand } from '../src/core/metrics/follow/tail';
import { wrapForTarget } from '../src/core/targets';
import type { TargetRef } from '../src/core/types';
import { startTestHost, ScriptedPrompter } from '../test/harness/testHost';
import { writeManyRuns } from '../test/fixtures/generate';
import { ms, stats, table, timed, type Stats } from './util';

const args = parseArgs({ options: { n: { type: 'string', default: '30' }, runs: { type: 'string', default: '50' }, ckpts: { type: 'string', default: '100' } } }).values;
const N = Number(args.n);
const RUNS = Number(args.runs);
const CKPTS = Number(args.ckpts);
const quiet = { info() {}, warn() {}, error() {} };

async function main(): Promise<void> {
  const loadAtStart = os.loadavg()[0];
  const host = await startTestHost();
  const root = fs.mkdtempSync(path.join(host.dir, 'transport-runs-'));
  fs.chmodSync(root, 0o755);
  writeManyRuns(root, RUNS, CKPTS);
  // A metrics log of 1 MiB, of which one read takes the first 256 KiB (what a follow catching up reads per poll).
  const metrics = path.join(root, 'big-metrics.jsonl');
  const rows: string[] = [];
  for (let step = 0, size = 0; size < 1 << 20; step++) {
    const row = JSON.stringify({ step, loss: 2 / (1 + step / 1000), lr: 3e-4, grad_norm: 1 + (step % 7) / 10 });
    rows.push(row);
    size += row.length + 1;
  }
  fs.writeFileSync(metrics, rows.join('\n') + '\n');
  fs.chmodSync(metrics, 0o644);
  const resolved = new HostDirectory({ hosts: () => [host.hostConfig('bench')], includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' }).resolve(host.hostConfig('bench'));
  const options = { prompter: new ScriptedPrompter(), logger: quiet, knownHostsFiles: [host.knownHostsFile], agent: null };
  const ssh2 = await SshConnection.connect(resolved, options);
  const openssh = await OpenSshConnection.connect(resolved, options);
  const target: TargetRef = { kind: 'host', id: '' };
  const kinds: { label: string; line: string; maxOutputBytes?: number }[] = [
    { label: 'small command (true)', line: 'true' },
    { label: `list script (${RUNS} runs × ${CKPTS} ckpts)`, line: wrapForTarget(target, listRunsCommand([root], { maxEntries: RUNS * (4 + 2 * CKPTS) + 1000 }).argv), maxOutputBytes: 64 << 20 },
    {
      label: 'metrics tail read (256 KiB)',
      line: wrapForTarget(target, tailReadCommand(metrics, { offset: 0, maxBytes: 256 * 1024, expectHead: '', expectInode: '' }).argv),
    },
    { label: 'metrics follow poll (stat only)', line: wrapForTarget(target, tailReadCommand(metrics, { offset: 0, maxBytes: 0, expectHead: '', expectInode: '' }).argv) },
  ];
  const failures: string[] = [];
  const results: { label: string; ssh2: Stats; openssh: Stats; ratio: number; stdoutBytes: number }[] = [];
  try {
    for (const k of kinds) {
      const samples: Record<'ssh2' | 'openssh', number[]> = { ssh2: [], openssh: [] };
      let bytes = 0;
      const run = async (t: Transport): Promise<Buffer> => {
        const r = await t.exec(k.line, { maxOutputBytes: k.maxOutputBytes });
        if (r.code !== 0) failures.push(`${k.label} over ${t.kind}: exit ${r.code}: ${r.stderr.toString().slice(0, 200)}`);
        return r.stdout;
      };
      // Warm-up (and the check that both transports return the same bytes; the list script's output holds the
      // remote clock, so only its size is compared).
      const [a, b] = [await run(ssh2), await run(openssh)];
      if (k.label.startsWith('list') ? Math.abs(a.length - b.length) > 64 : !a.equals(b)) failures.push(`${k.label}: the transports' outputs differ (${a.length} vs ${b.length} bytes)`);
      bytes = a.length;
      for (let i = 0; i < N; i++) {
        for (const t of [ssh2, openssh] as Transport[]) samples[t.kind].push((await timed(() => run(t))).ms);
      }
      const s2 = stats(samples.ssh2);
      const so = stats(samples.openssh);
      results.push({ label: k.label, ssh2: s2, openssh: so, ratio: so.median / s2.median, stdoutBytes: bytes });
    }
  } finally {
    ssh2.close();
    openssh.close();
    await host.stop();
  }
  console.log(`Transport cost per command, ${N} interleaved samples each, same sshd on 127.0.0.1 (load ${loadAtStart.toFixed(2)} at start, ${os.loadavg()[0].toFixed(2)} at end, ${os.availableParallelism()} cores)`);
  console.log(
    table(
      ['command', 'stdout', 'ssh2 median', 'ssh2 min', 'OpenSSH median', 'OpenSSH min', 'OpenSSH / ssh2'],
      results.map((r) => [r.label, `${r.stdoutBytes} B`, ms(r.ssh2.median), ms(r.ssh2.min), ms(r.openssh.median), ms(r.openssh.min), `${r.ratio.toFixed(2)}x`]),
    ),
  );
  for (const f of failures) console.log(`FAILED: ${f}`);
  console.log(JSON.stringify({ bench: 'transport', n: N, results: results.map((r) => ({ label: r.label, ssh2: r.ssh2.median, openssh: r.openssh.median, ratio: Number(r.ratio.toFixed(3)) })), failures }));
  process.exitCode = failures.length ? 1 : 0;
}

void main();
