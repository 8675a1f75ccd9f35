/**
 * A real single-node Slurm for integration tests: Debian's `slurm-wlm` and `munge`, started as root on this machine.
 * munged (reused when one already answers), slurmctld and slurmd in the foreground (-D) as our children, one node
 * `localhost` at 127.0.0.1 with this machine's CPUs, one default partition.
 *
 * Facts this relies on (checked on Debian 12, Slurm 22.05, munge 0.5.15):
 * - The clients (sbatch, squeue, scancel run by the test user over sshd) read /etc/slurm/slurm.conf; sshd does not pass
 *   SLURM_CONF, so the harness writes that file, marked as ours, and refuses to touch one that is not.
 * - Without slurmdbd, `sacct` says "Slurm accounting storage is disabled"; `squeue -t all` still reports finished jobs
 *   for MinJobAge (300 s by default), which is what the eval code reads first.
 * - ProctrackType=proctrack/linuxproc and TaskPlugin=task/none need no cgroups (none are delegated here).
 * - sched/builtin starts a job as soon as resources free up (a --begin time waits for the next scheduling pass, up to
 *   a minute), so tests make a job pend behind an --exclusive blocker job instead.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createServer } from 'node:net';

const CONF = '/etc/slurm/slurm.conf';
const MARKER = '# Written by the remote-runs test harness (test/harness/slurm.ts); safe to delete.';
const BINARIES = ['/usr/sbin/munged', '/usr/sbin/slurmctld', '/usr/sbin/slurmd', '/usr/bin/sbatch', '/usr/bin/squeue', '/usr/bin/scancel'];

export interface TestSlurm {
  partition: string;
  /** Submit a job as `user` (e.g. a blocker that keeps the node busy); returns its id. */
  submitAs(user: string, args: string[]): string;
  /** The job's state word from `squeue -t all` ('' when unknown). */
  jobState(jobId: string): string;
  /** Cancel a job as root. */
  cancel(jobId: string): void;
  stop(): Promise<void>;
}

/** Start Slurm; throws saying exactly what is missing or failed. */
export async function startSlurm(): Promise<TestSlurm> {
  const missing = BINARIES.filter((b) => !fs.existsSync(b));
  if (missing.length) throw new Error(`Slurm test harness: missing ${missing.join(', ')} (apt-get install slurm-wlm munge)`);
  if (fs.existsSync(CONF) && !fs.readFileSync(CONF, 'utf8').includes(MARKER)) {
    throw new Error(`Slurm test harness: ${CONF} exists and is not ours; refusing to overwrite a real Slurm configuration`);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-slurm-'));
  fs.chmodSync(dir, 0o755);
  for (const d of ['state', 'spool', 'log']) fs.mkdirSync(path.join(dir, d));
  execFileSync('chown', ['-R', 'slurm:slurm', dir]);

  const munged = startMunge();
  const [ctldPort, dPort] = [await freePort(), await freePort()];
  fs.mkdirSync(path.dirname(CONF), { recursive: true });
  fs.writeFileSync(CONF, slurmConf(dir, ctldPort, dPort));

  const children: ChildProcess[] = [];
  const logs: string[] = [];
  const start = (bin: string, args: string[]): ChildProcess => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (b: Buffer) => logs.push(b.toString()));
    child.stderr!.on('data', (b: Buffer) => logs.push(b.toString()));
    children.push(child);
    return child;
  };
  const stop = async (): Promise<void> => {
    for (const c of children.reverse()) {
      if (c.exitCode !== null || c.signalCode !== null) continue;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGTERM');
      const t = setTimeout(() => c.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    }
    munged?.stop();
    if (fs.existsSync(CONF) && fs.readFileSync(CONF, 'utf8').includes(MARKER)) fs.rmSync(CONF);
    fs.rmSync(dir, { recursive: true, force: true });
  };

  try {
    // -i: ignore state left by an earlier run; -D: stay in the foreground as our child.
    start('/usr/sbin/slurmctld', ['-D', '-i']);
    await waitFor(() => run('/usr/bin/scontrol', ['ping']).includes('UP'), 'slurmctld to answer', () => logs.join(''));
    start('/usr/sbin/slurmd', ['-D', '-N', 'localhost']);
    await waitFor(() => /^idle/.test(run('/usr/bin/sinfo', ['-h', '-n', 'localhost', '-o', '%t']).trim()), 'the node to be idle', () =>
      logs.join('') + fs.readdirSync(path.join(dir, 'log')).map((f) => fs.readFileSync(path.join(dir, 'log', f), 'utf8')).join(''),
    );
  } catch (e) {
    await stop();
    throw e;
  }

  return {
    partition: 'debug',
    submitAs: (user, args) => execFileSync('runuser', ['-u', user, '--', '/usr/bin/sbatch', '--parsable', ...args], { encoding: 'utf8', cwd: '/tmp' }).trim().split(';')[0],
    jobState: (jobId) => run('/usr/bin/squeue', ['-h', '-t', 'all', '-j', jobId, '-o', '%T']).trim(),
    cancel: (jobId) => {
      execFileSync('/usr/bin/scancel', [jobId]);
    },
    stop,
  };
}

/** Reuse a munged that answers; otherwise start one as the munge user. */
function startMunge(): { stop(): void } | undefined {
  if (mungeWorks()) return undefined;
  fs.mkdirSync('/run/munge', { recursive: true });
  execFileSync('chown', ['munge:munge', '/run/munge']);
  fs.chmodSync('/run/munge', 0o755);
  execFileSync('runuser', ['-u', 'munge', '--', '/usr/sbin/munged']);
  if (!mungeWorks()) throw new Error('Slurm test harness: munged started but `munge -n | unmunge` fails');
  const pidFile = '/run/munge/munged.pid';
  const pid = fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8').trim()) : 0;
  return {
    stop: () => {
      if (pid > 0) {
        try {
          process.kill(pid, 'SIGTERM');
        } catch {
          // already gone
        }
      }
    },
  };
}

function mungeWorks(): boolean {
  try {
    const cred = execFileSync('munge', ['-n'], { stdio: ['ignore', 'pipe', 'ignore'] });
    execFileSync('unmunge', [], { input: cred, stdio: ['pipe', 'ignore', 'ignore'] });
    return true;
  } catch {
    return false;
  }
}

function slurmConf(dir: string, ctldPort: number, dPort: number): string {
  return [
    MARKER,
    'ClusterName=rrtest',
    'SlurmctldHost=localhost',
    'SlurmUser=slurm',
    'SlurmdUser=root',
    'AuthType=auth/munge',
    'CredType=cred/munge',
    `SlurmctldPort=${ctldPort}`,
    `SlurmdPort=${dPort}`,
    `StateSaveLocation=${dir}/state`,
    `SlurmdSpoolDir=${dir}/spool`,
    `SlurmctldPidFile=${dir}/slurmctld.pid`,
    `SlurmdPidFile=${dir}/slurmd.pid`,
    `SlurmctldLogFile=${dir}/log/slurmctld.log`,
    `SlurmdLogFile=${dir}/log/slurmd.log`,
    'ProctrackType=proctrack/linuxproc',
    'TaskPlugin=task/none',
    'JobAcctGatherType=jobacct_gather/none',
    'AccountingStorageType=accounting_storage/none',
    'JobCompType=jobcomp/none',
    'SchedulerType=sched/builtin',
    'SelectType=select/cons_tres',
    'SelectTypeParameters=CR_Core',
    'MpiDefault=none',
    'ReturnToService=2',
    // scancel's TERM → KILL wait, short for tests.
    'KillWait=2',
    `NodeName=localhost NodeAddr=127.0.0.1 CPUs=${os.cpus().length} RealMemory=1000 State=UNKNOWN`,
    'PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP',
    '',
  ].join('\n');
}

function run(bin: string, args: string[]): string {
  try {
    return execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch {
    return '';
  }
}

async function waitFor(ok: () => boolean, what: string, diagnostics: () => string, limitMs = 30_000): Promise<void> {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > limitMs) throw new Error(`Slurm test harness: timed out waiting for ${what}\n${diagnostics().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}
