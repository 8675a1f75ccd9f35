/**
 * Checkpoint download benchmark, in one run: the time to pull a file (default 1 GiB of random bytes) with OpenSSH
 * `scp` (aes128-gcm, the cipher ssh2 negotiates, and scp's default), with this extension's core from the bare host
 * (SFTP and exec lanes, 1 and N connections) and from inside a `pct` container, as throughput ratios to scp;
 * then the bytes fetched again after the connection is killed at 50%.
 *
 *   node --import tsx bench/transfer.ts [--size-mb 1024] [--rounds 3] [--lanes 4] [--native]
 *
 * By default ssh2's native crypto binding is disabled, because the bundled extension ships without it
 * (esbuild.mjs marks it external); `--native` measures with it. Methods run interleaved, round after round, and
 * the median is reported, so a busy machine skews every method alike rather than one.
 */
import * as Module from 'node:module';

if (!process.argv.includes('--native')) {
  // Before ssh2 loads: make its optional native binding fail to load, as in the bundle.
  (Module as unknown as { _extensions: Record<string, unknown> })._extensions['.node'] = () => {
    throw new Error('native add-ons disabled for this benchmark');
  };
}

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

const MiB = 1 << 20;

async function main(): Promise<void> {
  // Required after the hook above so ssh2 sees it (a static import would load ssh2 first).
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { startTestHost, ScriptedPrompter } = require('../test/harness/testHost') as typeof import('../test/harness/testHost');
  const { ConnectionPool } = require('../src/core/ssh/pool') as typeof import('../src/core/ssh/pool');
  const { HostDirectory } = require('../src/core/hosts') as typeof import('../src/core/hosts');
  const { planDownload, download } = require('../src/core/transfer') as typeof import('../src/core/transfer');
  const binding = (require('ssh2/lib/protocol/crypto.js') as { bindingAvailable?: boolean }).bindingAvailable === true;

  const size = arg('--size-mb', 1024) * MiB;
  const rounds = arg('--rounds', 3);
  const lanes = arg('--lanes', 4);
  const host = await startTestHost();
  const local = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-bench-dl-'));
  try {
    // One random file (incompressible, and hashing it proves nothing was skipped), visible on the bare host and,
    // through a hard link, inside pct:200 as /workspace/bench/big.bin.
    const bareDir = path.join(host.dir, 'bench');
    fs.mkdirSync(bareDir);
    const bare = path.join(bareDir, 'big.bin');
    execFileSync('sh', ['-c', `head -c ${size} /dev/urandom > "$1"`, 'sh', bare]);
    fs.chmodSync(bare, 0o644);
    fs.chmodSync(bareDir, 0o755);
    const ctDir = path.join(host.containers.pct200.workspace, 'bench');
    fs.mkdirSync(ctDir);
    fs.linkSync(bare, path.join(ctDir, 'big.bin'));
    fs.chmodSync(ctDir, 0o755);
    execFileSync('cat', [bare], { stdio: ['ignore', 'ignore', 'inherit'] }); // into the page cache

    const hostConfig = host.hostConfig();
    const dir = new HostDirectory({ hosts: () => [hostConfig], includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
    const resolved = dir.resolve(hostConfig);
    const out = path.join(local, 'out.bin');

    const scp = (cipher?: string) => async (): Promise<void> => {
      execFileSync('scp', [
        '-q',
        '-o', 'BatchMode=yes',
        '-o', `UserKnownHostsFile=${host.knownHostsFile}`,
        '-i', host.sshd.clientKeyPath,
        '-P', String(host.sshd.port),
        ...(cipher ? ['-c', cipher] : []),
        `${host.sshd.user}@127.0.0.1:${bare}`,
        out,
      ]);
    };

    /** One download through the core; returns the bytes that crossed the network. */
    const core = async (
      target: { kind: 'host' | 'pct'; id: string },
      transport: 'sftp' | 'exec',
      concurrency: number,
      interruptAt?: number,
    ): Promise<number> => {
      const pool = new ConnectionPool({
        prompter: new ScriptedPrompter(),
        logger: { info() {}, warn() {}, error() {} },
        knownHostsFiles: [host.knownHostsFile],
        backoffBaseMs: 50,
      });
      try {
        const remote = target.kind === 'host' ? bare : '/workspace/bench/big.bin';
        const ck = { name: 'big.bin', step: 1, layout: 'flat' as const, path: remote, isDir: false, bytes: size, mtime: 0, files: [], newest: true };
        const plan = await planDownload({ pool, host: resolved, target }, ck, { root: local, run: 'bench' });
        let fired = false;
        const res = await download(plan, {
          transport,
          concurrency,
          onProgress: (p) => {
            if (interruptAt !== undefined && !fired && p.bytesDone >= p.bytesTotal * interruptAt) {
              fired = true;
              host.sshd.killConnections();
            }
          },
        });
        fs.renameSync(res.files[0].localPath, out);
        for (const f of fs.readdirSync(path.join(local, 'bench'))) fs.rmSync(path.join(local, 'bench', f));
        return res.bytesFetched;
      } finally {
        pool.dispose();
      }
    };

    const methods: { name: string; run: () => Promise<unknown> }[] = [
      { name: 'scp -c aes128-gcm@openssh.com', run: scp('aes128-gcm@openssh.com') },
      { name: 'scp (default cipher)', run: scp() },
      { name: `core bare host, sftp x${lanes} connections`, run: () => core({ kind: 'host', id: '' }, 'sftp', lanes) },
      { name: `core bare host, exec x${lanes} connections`, run: () => core({ kind: 'host', id: '' }, 'exec', lanes) },
      { name: 'core bare host, sftp x1 (shared conn only)', run: () => core({ kind: 'host', id: '' }, 'sftp', 1) },
      { name: `core pct:200, exec x${lanes} connections`, run: () => core({ kind: 'pct', id: '200' }, 'exec', lanes) },
      { name: 'core pct:200, exec x1 (shared conn only)', run: () => core({ kind: 'pct', id: '200' }, 'exec', 1) },
    ];
    const times = new Map<string, number[]>(methods.map((m) => [m.name, []]));
    const expected = execFileSync('sha256sum', [bare], { encoding: 'utf8' }).slice(0, 64);
    for (let r = 0; r < rounds; r++) {
      for (const m of methods) {
        fs.rmSync(out, { force: true });
        const t0 = process.hrtime.bigint();
        await m.run();
        const s = Number(process.hrtime.bigint() - t0) / 1e9;
        if (fs.statSync(out).size !== size) throw new Error(`${m.name}: wrong size`);
        if (r === 0 && execFileSync('sha256sum', [out], { encoding: 'utf8' }).slice(0, 64) !== expected) throw new Error(`${m.name}: wrong bytes`);
        times.get(m.name)!.push(s);
        process.stderr.write(`round ${r + 1}: ${m.name} ${s.toFixed(2)} s\n`);
      }
    }

    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const gcm = median(times.get(methods[0].name)!);
    const dflt = median(times.get(methods[1].name)!);
    console.log(`\nPull of ${size / MiB} MiB, median of ${rounds} interleaved rounds; ssh2 native crypto binding: ${binding ? 'on' : 'off'}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} on ${os.cpus().length} CPUs`);
    console.log(`${'method'.padEnd(44)} ${'time'.padStart(8)} ${'MB/s'.padStart(7)} ${'vs scp-gcm'.padStart(11)} ${'vs scp'.padStart(8)}`);
    for (const m of methods) {
      const t = median(times.get(m.name)!);
      console.log(`${m.name.padEnd(44)} ${t.toFixed(2).padStart(7)}s ${(size / t / 1e6).toFixed(0).padStart(7)} ${(gcm / t).toFixed(2).padStart(10)}x ${(dflt / t).toFixed(2).padStart(7)}x`);
    }

    const fetched = await core({ kind: 'host', id: '' }, 'sftp', lanes, 0.5);
    const refetched = fetched - size;
    console.log(`\nConnection killed at 50% (bare host, sftp x${lanes}): ${fetched} bytes fetched for a ${size}-byte file; refetched ${refetched} bytes (${((refetched / size) * 100).toFixed(3)}%)`);
    const fetchedCt = await core({ kind: 'pct', id: '200' }, 'exec', lanes, 0.5);
    console.log(`Connection killed at 50% (pct:200, exec x${lanes}): refetched ${fetchedCt - size} bytes (${(((fetchedCt - size) / size) * 100).toFixed(3)}%)`);
  } finally {
    await host.stop();
    fs.rmSync(local, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
