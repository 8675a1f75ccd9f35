/**
 * `remote-runs`: the headless face of the same core the extension uses.
 *
 *   remote-runs ls ADDRESS [--json]
 *   remote-runs pull ADDRESS [--to DIR] [--verify] [--size-only] [--force]
 *   remote-runs eval PROFILE ADDRESS [--follow]
 *   remote-runs eval --card RUN_ADDRESS [--json] [--references FILE] [--results STEP=FILE…]
 *   remote-runs metrics ADDRESS [--json|--csv] [--follow]
 *   remote-runs inspect ADDRESS [--json]
 *   remote-runs diff ADDRESS_A ADDRESS_B [--json]
 *   remote-runs logs CLUSTER/[NAMESPACE/]JOB[/RANK[:CONTAINER]] [--follow] [--all-containers] [--json]
 *   common: [--config FILE] [--ssh-config FILE] [--known-hosts FILE]
 *
 * Exit codes: 0 ok, 2 a typed failure (the kind is printed), 1 a usage error, 141 when the program reading the
 * output stopped first (`| head`), as a shell reports for `cat`.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import * as fs from 'node:fs';
import * as v8 from 'node:v8';
import { parseArgs } from 'node:util';
import { ConnectionPool } from '../core/ssh/pool';
import { describeTransport, problemsFor } from '../core/ssh/transport';
import { HostDirectory } from '../core/hosts';
import { RemoteRunsCore, type PickedCheckpoint } from '../core/service';
import { transferSourceFor, type SkippedEntry, type TransferSource } from '../core/transfer';
import { addressHost, parseAddress, type Address } from '../core/address';
import { parseConfigFileEntries } from '../core/config';
import { RemoteRunsError, asRemoteRunsError, isRemoteRunsError, type ClusterConfig, type HostConfig, type TargetRef } from '../core/types';
import { logsCommand, lsClusterPlace, needContainer, resolveClusterCliAddress, type ResolvedClusterAddress } from './cluster';
import { TerminalPrompter } from './prompter';
import { lsCommand } from './ls';
import { pullCommand } from './pull';
import { evalCommand } from './eval';
import { cardCommand } from './card';
import { metricsCommand } from './metrics';
import { inspectCommand, diffCommand } from './inspect';
import { EvalService } from '../core/eval/service';
import { parseEvalProfiles } from '../core/eval/profiles';
import { poolMeasure } from '../core/eval/spec/server/checkpointEval';
import type { SpecServerProfile } from '../core/eval/spec/server/profile';
import type { EvalProfile } from '../core/eval/types';
import { BulkLinks } from '../core/metrics/follow/bulkLinks';
import { displayStream } from './output';
import { expandHome } from '../core/util/home';

const USAGE = `usage: remote-runs ls ADDRESS [--json] [--config FILE] [--ssh-config FILE] [--known-hosts FILE]
       remote-runs pull ADDRESS [--to DIR] [--json] [--verify] [--size-only] [--force] [--client auto|openssh|ssh2] [--config FILE] [--ssh-config FILE] [--known-hosts FILE]
       remote-runs eval PROFILE ADDRESS [--follow] [--to DIR] [--config FILE] [--ssh-config FILE] [--known-hosts FILE]
       remote-runs eval --card host/target/run [--json] [--references FILE] [--results STEP=FILE…] [--config FILE] [--ssh-config FILE] [--known-hosts FILE]
       remote-runs metrics ADDRESS [--json|--csv] [--follow] [--config FILE] [--ssh-config FILE] [--known-hosts FILE]
       remote-runs inspect ADDRESS [--json] [--config FILE] [--ssh-config FILE] [--known-hosts FILE]
       remote-runs diff ADDRESS_A ADDRESS_B [--json] [--config FILE] [--ssh-config FILE] [--known-hosts FILE]
       remote-runs logs CLUSTER/[NAMESPACE/]JOB[/RANK[:CONTAINER]] [--follow] [--all-containers] [--json] [--config FILE]

ADDRESS is host, host/target or host/target/run (ls), or host/target/run/CHECKPOINT (pull), where target is
"host", "pct:<vmid>" or "docker:<name>" and CHECKPOINT a name (step_20000), a step (20000) or "latest".
pull writes DIR/<run>/<checkpoint>/… (default DIR: the current folder; its state in DIR/.remote-runs/), progress
on stderr, the local path on stdout. Every byte is proven equal to the remote by SHA-256 computed on both sides
before a file is put in place; --size-only checks the size only (faster, not verified); --verify also hashes files
already downloaded again. A local file that differs is replaced only with --force or when a terminal can ask; one
found identical by SHA-256 is kept. "latest" is the newest complete checkpoint: pull says on stderr which newer ones it
skipped as incomplete and why (--json prints {local, checkpoint, skipped, note} instead of the path); a checkpoint named
while incomplete is pulled with a warning. A second pull of the same checkpoint into DIR while one runs fails (busy). The bytes move through
the system's OpenSSH client (ssh, logged in with the key or password this program already has, pinned to the host key it trusted)
where it can, else through the built-in client; --client chooses ($REMOTE_RUNS_SSH names another ssh binary).
eval starts the config's eval profile PROFILE on ADDRESS (as for pull), detached, and prints its id and log; with
--follow it streams the log to stdout and exits with the eval's exit status. Profiles come from the config's
"evalProfiles" array (same schema as the remoteRuns.evalProfiles setting); a profile using \${localCheckpoint}
gets the checkpoint as pull --to DIR downloaded it (pull it first). A "speculative-server" profile measures its running
SGLang or vLLM server through the host's SSH link, here, prints the result line (--json: with its settings) and
records it as an eval of the checkpoint in the run's folder. eval --card prints the run's speculative-decoding card:
τ and p_k of each checkpoint so measured beside the paper's and a reference drafter's rows entered for the run in
FILE (default .vscode/remote-runs.references.json here), the differences and the settings that differ (--json: the card);
--results STEP=FILE adds a tool's output file (bench_speculative, SpecForge, spec_decode.py, EAGLE, aiperf) as STEP's row.
metrics prints each series of the run at host/target/run: its name, point count, first and last (step, value);
--csv prints every point (series,step,value,time), --json a summary object; --follow then prints new points as
they arrive (text and CSV rows, or one JSON object per point with --json) until Ctrl-C.
inspect reads what the checkpoint at ADDRESS (as for pull) holds from its headers, over one remote command, without
downloading or loading it: tensors by module with dtype and shape, parameter counts, optimizer state, step, and
whether it is complete. diff compares two checkpoints (on any hosts): tensors added, removed, changed in shape or
dtype, and the totals side by side.
On a Kubernetes cluster (a config entry with "kind": "kubernetes") an address is
CLUSTER/[NAMESPACE/]JOB/RANK[:CONTAINER]/RUN/CHECKPOINT (NAMESPACE left out when the entry names one; RANK as ls
shows it, master-0 or worker-3, rankN, or the pod's name; CONTAINER left out when the pod has one or a default), or
CLUSTER/pod:NAMESPACE/POD:CONTAINER/RUN/CHECKPOINT; ls CLUSTER, CLUSTER/NAMESPACE or CLUSTER/.../JOB shows the jobs
and pods with their states. logs prints the job's pods' logs (or one rank's) merged in time order, each line
prefixed with its rank ([worker-1] …); --follow keeps following, a restarted or replaced pod in its rank's place.
Hosts come from --config (JSON {"hosts": [...]}, same schema as the remoteRuns.hosts setting; default
$REMOTE_RUNS_CONFIG or ~/.config/remote-runs/config.json) and from the Host entries of ~/.ssh/config. Host keys are
checked against --known-hosts, else the config's "knownHostsFiles" (as the remoteRuns.knownHostsFiles setting),
else ~/.ssh/known_hosts.`;

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  stdin: NodeJS.ReadStream;
  env: NodeJS.ProcessEnv;
}

export async function main(
  argv: string[],
  io: CliIo = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env },
  signal: AbortSignal = new AbortController().signal,
): Promise<number> {
  // Output read by a program that may stop reading (`| head -4`): its end closing is the end of this run.
  const output = watchOutput(io, signal);
  try {
    const code = await command(argv, io, output.signal);
    // A write that failed in the command's last tick reports its error on the next one: heard before the status.
    await new Promise((resolve) => setImmediate(resolve));
    return output.status ?? code;
  } catch (e) {
    // Whatever failed once the output was gone (the command it cancelled) has nobody to read it.
    if (output.status !== undefined) return output.status;
    throw e;
  }
}

/** What a shell reports for `cat` killed by SIGPIPE (128 + 13): the status of a command whose reader left first. */
const SIGPIPE_STATUS = 141;

/**
 * Every command writes through io.stdout and io.stderr, so their failures are handled here, once. A reader that
 * closes its end (`remote-runs metrics … --csv | head -4`) makes the next write fail with EPIPE, and an unhandled
 * stream error is a stack trace. Here it aborts the command instead (its channels close through the signal, its ssh
 * processes with the pool when `command` returns), writes nothing more, and the run ends with SIGPIPE_STATUS, as
 * `cat` would. Any other output error (a full disk under `> file`) ends the run the same way, said on stderr, with 2.
 *
 * The listeners stay for the life of the streams: a write that failed in the last tick of a run reports its error
 * after `main` has returned.
 */
function watchOutput(io: CliIo, outer: AbortSignal): { signal: AbortSignal; readonly status: number | undefined } {
  const controller = new AbortController();
  if (outer.aborted) controller.abort();
  else outer.addEventListener('abort', () => controller.abort(), { once: true });
  let status: number | undefined;
  const onError = (stream: NodeJS.WritableStream) => (e: NodeJS.ErrnoException): void => {
    if (status !== undefined) return;
    status = e.code === 'EPIPE' ? SIGPIPE_STATUS : 2;
    controller.abort();
    if (status !== SIGPIPE_STATUS && stream !== io.stderr) io.stderr.write(`remote-runs: output: ${e.message}\n`);
  };
  io.stdout.on('error', onError(io.stdout));
  io.stderr.on('error', onError(io.stderr));
  return {
    signal: controller.signal,
    get status() {
      return status;
    },
  };
}

/** One command, from its arguments to its exit status (see the file's head). */
async function command(argv: string[], io: CliIo, signal: AbortSignal): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        json: { type: 'boolean', default: false },
        csv: { type: 'boolean', default: false },
        to: { type: 'string' },
        verify: { type: 'boolean', default: false },
        'size-only': { type: 'boolean', default: false },
        force: { type: 'boolean', default: false },
        client: { type: 'string' },
        follow: { type: 'boolean', default: false },
        card: { type: 'boolean', default: false },
        references: { type: 'string' },
        results: { type: 'string', multiple: true },
        'all-containers': { type: 'boolean', default: false },
        config: { type: 'string' },
        'ssh-config': { type: 'string' },
        'known-hosts': { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (e) {
    io.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${USAGE}\n`);
    return 1;
  }
  const { values, positionals } = parsed;
  // The one writer of text: no control or bidi character of a remote name or file reaches the terminal raw
  // (shared/display.ts). --json and --csv stdout stay exact: they are data for programs, with escapes of their own.
  io = { ...io, stdout: values.json || values.csv ? io.stdout : displayStream(io.stdout), stderr: displayStream(io.stderr) };
  const [verb] = positionals;
  // eval takes its profile before the address (eval --card takes none).
  const card = verb === 'eval' && values.card;
  const address = verb === 'eval' && !card ? positionals[2] : positionals[1];
  if (values.help || !verb) {
    (values.help ? io.stdout : io.stderr).write(`${USAGE}\n`);
    return values.help ? 0 : 1;
  }
  const verbs = ['ls', 'pull', 'eval', 'metrics', 'inspect', 'diff', 'logs'];
  const wanted = (verb === 'eval' && !card) || verb === 'diff' ? 3 : 2;
  if ((values.card || values.references !== undefined || values.results !== undefined) && !(verb === 'eval' && card)) {
    io.stderr.write(`--card, --references and --results go with eval --card host/target/run\n${USAGE}\n`);
    return 1;
  }
  if (!verbs.includes(verb) || !address || positionals.length > wanted || (verb === 'diff' && positionals.length !== 3)) {
    io.stderr.write(`${USAGE}\n`);
    return 1;
  }

  const home = io.env.HOME || os.homedir();
  const debug = (m: string): void => {
    if (io.env.REMOTE_RUNS_DEBUG) io.stderr.write(`${m}\n`);
  };
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(values.config, io.env, home);
  } catch (e) {
    return failed(e, values.json, io);
  }
  const pool = new ConnectionPool({
    prompter: new TerminalPrompter(io.stdin, io.stderr as NodeJS.WriteStream),
    logger: { info: debug, warn: debug, error: debug },
    knownHostsFiles: values['known-hosts']?.length ? values['known-hosts'] : config.knownHostsFiles ?? [path.join(home, '.ssh', 'known_hosts')],
    // Named on the command line: like `ssh -o UserKnownHostsFile=`, they win over the ssh config's files.
    knownHostsPinned: Boolean(values['known-hosts']?.length),
    // The ssh of hosts on the OpenSSH transport (certificates, security keys, …), as for pull's OpenSSH streams.
    sshPath: io.env.REMOTE_RUNS_SSH || undefined,
    // A pull's commands and byte streams share one OpenSSH login where it asks nothing (ssh/opensshFirst.ts), instead
    // of the built-in client's login followed by an OpenSSH session's; `--client ssh2` keeps the built-in client.
    opensshFirst: verb === 'pull' && values.client !== 'ssh2',
  });
  // A long metrics backlog as one OpenSSH stream; this process opens one log, so it waits for that login.
  const bulk = new BulkLinks(pool, { sshPath: () => io.env.REMOTE_RUNS_SSH || undefined, startInBackground: false, logger: { info: debug, warn: debug, error: debug } });
  try {
    const hostsFromFile = config.hosts;
    const hosts = new HostDirectory({
      hosts: () => hostsFromFile,
      includeSshConfigHosts: () => true,
      sshConfigPath: () => values['ssh-config'],
      home,
      onSshConfigProblems: (problems) => problems.forEach(debug),
    });
    const core = new RemoteRunsCore({
      hosts: () => hosts.configs(),
      // Listings are idempotent: safe to retry once on a connection that dropped under them.
      executorFor: (host) => pool.executor(hosts.resolve(host), { idempotent: true }),
      streamFor: (host, target) => bulk.runner(hosts.resolve(host), target),
      // Clusters (`"kind": "kubernetes"` entries) are reached through kubectl on PATH (kube/kubectl.ts).
      clusters: () => config.clusters,
    });
    // A command's executor in a target: a cluster's pod container through kubectl exec, else the host's pooled link.
    const executorIn = (name: string, target: TargetRef, idempotent: boolean) =>
      core.cluster(name) ? core.targetExecutor(name, target) : pool.executor(hosts.resolve(core.host(name)), { idempotent });
    // The one place a download's source is made: pull, and an eval profile's ${localCheckpoint}.
    const downloadSource = (name: string, target: TargetRef): TransferSource => transferSourceFor(core, pool, (h) => hosts.resolve(h), name, target);
    // An address on a cluster names its namespace, job, rank and container (cli/cluster.ts); resolved against the
    // cluster's listing here, so every command below takes it as a pod container target.
    const clusterPlaces = new Map<string, ResolvedClusterAddress>();
    const toAddress = async (text: string): Promise<Address> => {
      const cluster = core.cluster(addressHost(text));
      if (!cluster) return parseAddress(text);
      const r = await resolveClusterCliAddress(core, cluster, text, signal);
      clusterPlaces.set(text, r);
      for (const p of r.problems) io.stderr.write(`remote-runs: ${cluster.name}: ${p}\n`);
      if ((verb === 'ls' || verb === 'logs') && !r.address) return { host: cluster.name };
      if (verb === 'logs') return r.address ?? { host: cluster.name };
      return needContainer(verb, cluster, r);
    };
    const addr = await toAddress(address);
    // diff's second address may name another host.
    const second = verb === 'diff' ? await toAddress(positionals[2]!) : undefined;
    // An address naming a host that is neither configured nor in ssh config is still tried as a plain host name
    // (a cluster never is).
    for (const a of second ? [addr, second] : [addr]) {
      if (!core.cluster(a.host) && !hosts.configs().some((h) => h.name === a.host)) hostsFromFile.push({ name: a.host, host: a.host });
    }
    const onCluster = core.cluster(addr.host);
    const place = clusterPlaces.get(address);
    if (verb === 'logs') {
      if (!onCluster || !place) throw new RemoteRunsError('bad-address', `logs reads the pods of a job on a Kubernetes cluster; ${addr.host} is not one (a run's own logs: remote-runs metrics)`);
      return await logsCommand(core, onCluster, place, { stdout: io.stdout, stderr: io.stderr, signal }, { follow: values.follow, allContainers: values['all-containers'], json: values.json });
    }
    if (verb === 'ls' && onCluster && place && !place.address) {
      const out = lsClusterPlace(onCluster, place);
      io.stdout.write(values.json ? `${JSON.stringify(out.json)}\n` : out.text);
      return out.exitCode;
    }
    // What the ssh config holds that this host's connection does not follow: said on every run, never only in a
    // debug log (a config ssh itself would refuse throws bad-config here, before any connection).
    // A cluster has none of this: kubectl carries it.
    const resolved = onCluster ? undefined : hosts.resolve(core.host(addr.host));
    // Which client carries this host, said when it is not the built-in one (and always in --json); a cluster's is kubectl.
    const sshTransport = resolved ? pool.transportFor(resolved) : undefined;
    const transport = sshTransport ?? { kind: 'kubectl' as const };
    if (sshTransport?.kind === 'openssh') io.stderr.write(`remote-runs: ${addr.host} uses ${describeTransport(sshTransport)}\n`);
    const sshConfigProblems = [
      ...new Set(
        (second && second.host !== addr.host ? [addr.host, second.host] : [addr.host]).flatMap((h) => {
          if (core.cluster(h)) return [];
          const r = h === addr.host && resolved ? resolved : hosts.resolve(core.host(h));
          return problemsFor(r.configProblems ?? [], h === addr.host && sshTransport ? sshTransport : pool.transportFor(r));
        }),
      ),
    ];
    for (const p of sshConfigProblems) io.stderr.write(`remote-runs: ssh config: ${p}\n`);
    if (verb === 'inspect' || verb === 'diff') {
      const deps = {
        core,
        // Header reads change nothing: safe to retry on a connection that dropped under them.
        executor: (name: string, target: TargetRef) => executorIn(name, target, true),
        stdout: io.stdout,
        stderr: io.stderr,
        signal,
      };
      return second ? await diffCommand(deps, addr, second, { json: values.json }) : await inspectCommand(deps, addr, { json: values.json });
    }
    if (verb === 'pull') {
      if (values['size-only'] && values.verify) throw new RemoteRunsError('bad-config', '--verify (hash again) and --size-only (no hashes) contradict each other');
      const client = values.client ?? 'auto';
      if (client !== 'auto' && client !== 'openssh' && client !== 'ssh2') {
        throw new RemoteRunsError('bad-config', `--client must be auto, openssh or ssh2, not ${JSON.stringify(client)}`);
      }
      let picked: PickedCheckpoint | undefined;
      let leftOut: SkippedEntry[] = [];
      const local = await pullCommand(
        { core, source: downloadSource, stderr: io.stderr, stdin: io.stdin, signal },
        addr,
        {
          to: path.resolve(values.to ?? '.'),
          verify: values['size-only'] ? 'size' : 'sha256',
          recheck: values.verify,
          force: values.force,
          client,
          sshPath: io.env.REMOTE_RUNS_SSH || undefined,
          onPicked: (p) => (picked = p),
          onSkipped: (s) => (leftOut = s),
        },
      );
      // --json: where it went, which checkpoint, and what `latest` passed over (the same words as on stderr).
      if (values.json && picked) {
        const p: PickedCheckpoint = picked;
        io.stdout.write(`${JSON.stringify({ local, checkpoint: p.checkpoint.name, ...(p.checkpoint.incomplete ? { incomplete: p.checkpoint.incomplete } : {}), skipped: p.skipped ?? [], entriesSkipped: leftOut, ...(p.note ? { note: p.note } : {}) })}\n`);
      } else io.stdout.write(`${local}\n`);
      return 0;
    }
    if (verb === 'metrics') {
      if (values.json && values.csv) throw new RemoteRunsError('bad-config', '--json and --csv are two output formats: choose one');
      return await metricsCommand(
        {
          core,
          executor: (name, target) => executorIn(name, target, true),
          stdout: io.stdout,
          stderr: io.stderr,
          signal,
        },
        addr,
        { format: values.json ? 'json' : values.csv ? 'csv' : 'text', follow: values.follow },
      );
    }
    if (verb === 'eval') {
      const evals = new EvalService({
        // Launches ask for idempotent: false so the pool never runs one twice.
        executorFor: (name, { idempotent }, target) => executorIn(name, target, idempotent),
        localStateDir: path.join(io.env.XDG_STATE_HOME || path.join(home, '.local', 'state'), 'remote-runs'),
      });
      if (card) {
        const options = { json: values.json, results: values.results ?? [], ...(values.references !== undefined ? { references: values.references } : {}) };
        return await cardCommand({ core, evals, stdout: io.stdout, stderr: io.stderr, signal, cwd: process.cwd() }, addr, options);
      }
      const { profiles, serverProfiles } = config.evalProfiles();
      return await evalCommand(
        {
          core,
          evals,
          profiles,
          serverProfiles,
          measureServer: poolMeasure(pool, (name) => hosts.resolve(core.host(name))),
          stdout: io.stdout,
          stderr: io.stderr,
          signal,
          downloads: { root: path.resolve(values.to ?? '.'), source: downloadSource },
        },
        positionals[1]!,
        addr,
        { follow: values.follow, json: values.json },
      );
    }
    const out = await lsCommand(core, addr, path.resolve(values.to ?? '.'));
    if (out.note) io.stderr.write(`remote-runs: ${out.note}\n`);
    const json = { ...(out.json as object), transport, ...(sshConfigProblems.length > 0 ? { sshConfigProblems } : {}) };
    io.stdout.write(values.json ? `${JSON.stringify(json)}\n` : out.text);
    return out.exitCode;
  } catch (e) {
    return failed(e, values.json, io);
  } finally {
    await bulk.dispose();
    // Its OpenSSH sessions' processes gone and their folders removed before this process exits.
    await pool.close();
  }
}

/**
 * A failure as the CLI reports it: `remote-runs: KIND: message` on stderr (and as JSON with --json); exit 2. An error
 * that is not a RemoteRunsError happened here, not on the remote side: `internal` (its stack with REMOTE_RUNS_DEBUG),
 * or `too-large` for the limits a huge input reaches (the call stack, a string's length, an array's).
 */
function failed(e: unknown, json: boolean, io: CliIo): number {
  const err = asRemoteRunsError(e);
  if (!isRemoteRunsError(e) && io.env.REMOTE_RUNS_DEBUG && e instanceof Error) io.stderr.write(`${e.stack}\n`);
  // A kubectl failure keeps which case of its kind it is and kubectl's own words (kube/errors.ts detail.cause, .kubectl).
  const cause = typeof err.detail.cause === 'string' ? err.detail.cause : undefined;
  const kubectl = typeof err.detail.kubectl === 'string' ? err.detail.kubectl : undefined;
  if (json) io.stdout.write(`${JSON.stringify({ error: { kind: err.kind, message: err.message, ...(cause ? { cause } : {}), ...(kubectl ? { kubectl } : {}) } })}\n`);
  io.stderr.write(`remote-runs: ${err.kind}: ${err.message}\n`);
  if (kubectl && !err.message.includes(kubectl)) io.stderr.write(`remote-runs: kubectl said: ${kubectl}\n`);
  return 2;
}

/** The config file's hosts, and its eval profiles parsed on demand (strictly: any problem is `bad-config`). */
function loadConfig(
  configPath: string | undefined,
  env: NodeJS.ProcessEnv,
  home: string,
): { hosts: HostConfig[]; clusters: ClusterConfig[]; knownHostsFiles?: string[]; evalProfiles(): { profiles: EvalProfile[]; serverProfiles: SpecServerProfile[] } } {
  const explicit = configPath ?? env.REMOTE_RUNS_CONFIG;
  const file = explicit ?? path.join(home, '.config', 'remote-runs', 'config.json');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if (!explicit && (e as NodeJS.ErrnoException).code === 'ENOENT') return { hosts: [], clusters: [], evalProfiles: () => ({ profiles: [], serverProfiles: [] }) };
    throw new RemoteRunsError('bad-config', `Cannot read config ${file}: ${(e as Error).message}`);
  }
  const { hosts, clusters } = parseConfigFileEntries(text, file);
  // Checked by parseConfigFile; `~/` is the home folder, as in the setting, and a relative path is the config's.
  const known = (JSON.parse(text) as { knownHostsFiles?: string[] }).knownHostsFiles;
  return {
    hosts,
    // A relative kubeconfig is the config file's neighbour, as knownHostsFiles are.
    clusters: clusters.map((c) => (c.kubeconfig ? { ...c, kubeconfig: path.resolve(path.dirname(file), expandHome(c.kubeconfig, home)) } : c)),
    knownHostsFiles: known?.map((f) => path.resolve(path.dirname(file), expandHome(f, home))),
    evalProfiles(): { profiles: EvalProfile[]; serverProfiles: SpecServerProfile[] } {
      const { profiles, problems, serverProfiles } = parseEvalProfiles((JSON.parse(text) as Record<string, unknown>).evalProfiles, `${file}: evalProfiles`);
      if (problems.length > 0) throw new RemoteRunsError('bad-config', problems.join('\n'), { path: file, problems });
      return { profiles, serverProfiles };
    },
  };
}

if (require.main === module) {
  // The heap grows by 30% of what the last full collection kept, not by up to four times (V8's default for a heap
  // limit of 1 GB or more): what a command holds is mostly long-lived (a plan, a listing, series), so the default grew
  // the heap to ~4x the live data between collections. A pull of 100,000 files peaked at 243 MB with the default and
  // 183 MB with this (idle CLI: 64 MB), in no more time (bench/manyFiles.ts); collections ran 17 times, ~8 ms each.
  // This process only: the extension host's heap is VS Code's.
  v8.setFlagsFromString('--heap-growing-percent=30');
  // Ctrl-C cancels the operation (closing its channels) and leaves .part files to resume from.
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  process.once('SIGTERM', () => controller.abort());
  main(process.argv.slice(2), undefined, controller.signal).then(
    (code) => {
      process.exitCode = code;
    },
    (e) => {
      process.stderr.write(`remote-runs: ${e instanceof Error ? e.stack : String(e)}\n`);
      process.exitCode = 1;
    },
  );
}
