/**
 * Which containers a host has, in one host-side command: `pct list` and `docker ps -a` when those tools exist.
 * Each tool's stdout, stderr and exit code come back in their own marked section, so one runtime's failure
 * (docker daemon down, socket permission denied, pct refused) becomes a `problem` line and never hides the
 * other runtime's containers, nor the bare host.
 */
import { RemoteRunsError, type Target, type TargetState } from '../types';
import { commandFailed, type ExecResult, type RemoteCommand } from '../remote';

export interface DiscoveredTargets {
  hasPct: boolean;
  hasDocker: boolean;
  /** The bare host first, then pct containers by vmid, then docker containers in docker's order. */
  targets: Target[];
  /** One line per runtime that exists but could not be asked, with its own error text. */
  problems: string[];
}

const MARK = '@@remote-runs@@';

/**
 * Section lines: `@@remote-runs@@ <tool> <out|err|rc> [code]`. A section's text is everything up to the next
 * marker line. Container names cannot hold newlines (docker: [a-zA-Z0-9_.-]; pct: hostnames), so a
 * marker line cannot be forged by a name.
 */
export const TARGETS_SCRIPT = `
exec 3>&1
section() {
  tool=$1; shift
  printf '\\n${MARK} %s out\\n' "$tool"
  err=$("$@" 2>&1 >&3 3>&-)
  rc=$?
  printf '\\n${MARK} %s err\\n%s\\n${MARK} %s rc %s\\n' "$tool" "$err" "$tool" "$rc"
}
printf '${MARK} begin\\n'
if command -v pct >/dev/null 2>&1; then section pct pct list; else printf '${MARK} pct absent\\n'; fi
if command -v docker >/dev/null 2>&1; then
  section docker docker ps -a --no-trunc --format '{{.Names}}\\t{{.State}}\\t{{.Status}}'
else
  printf '${MARK} docker absent\\n'
fi
printf '${MARK} end\\n'
`;

/** The one command that discovers a host's targets. Run it on the host itself (target `host`). */
export function discoverTargetsCommand(): RemoteCommand<DiscoveredTargets> {
  const describe = 'discover containers (pct list, docker ps)';
  return {
    argv: ['sh', '-c', TARGETS_SCRIPT],
    describe,
    maxOutputBytes: 4 * 1024 * 1024,
    parse: (result) => parseTargetsOutput(result, describe),
  };
}

interface Section {
  present: boolean;
  out: string;
  err: string;
  rc: number | undefined;
}

/** Parse the discovery script's output. Throws RemoteRunsError only when the output is not ours at all. */
export function parseTargetsOutput(result: ExecResult, describe = 'discover containers'): DiscoveredTargets {
  if (result.code !== 0) throw commandFailed(describe, result);
  const text = result.stdout.toString('utf8');
  const begin = text.indexOf(`${MARK} begin\n`);
  if (begin < 0 || !text.includes(`\n${MARK} end`)) {
    throw new RemoteRunsError('protocol', `Unexpected output from container discovery: ${JSON.stringify(text.slice(0, 120))}`);
  }
  const sections = splitSections(text.slice(begin));
  const pct = sections.get('pct') ?? { present: false, out: '', err: '', rc: undefined };
  const docker = sections.get('docker') ?? { present: false, out: '', err: '', rc: undefined };
  const targets: Target[] = [{ kind: 'host', id: '', state: 'running', label: 'host' }];
  const problems: string[] = [];
  if (pct.present) {
    if (pct.rc === 0) targets.push(...parsePctList(pct.out));
    else problems.push(problemLine('pct list', pct));
  }
  if (docker.present) {
    if (docker.rc === 0) targets.push(...parseDockerPs(docker.out));
    else problems.push(problemLine('docker ps', docker));
  }
  return { hasPct: pct.present, hasDocker: docker.present, targets, problems };
}

function splitSections(text: string): Map<string, Section> {
  const sections = new Map<string, Section>();
  let current: { section: Section; part: 'out' | 'err' } | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${MARK} `)) {
      const [tool, what, code] = line.slice(MARK.length + 1).split(' ');
      current = undefined;
      if (tool === 'begin' || tool === 'end' || what === 'absent') continue;
      const section = sections.get(tool) ?? { present: true, out: '', err: '', rc: undefined };
      sections.set(tool, section);
      if (what === 'out' || what === 'err') current = { section, part: what };
      else if (what === 'rc') section.rc = Number(code);
      continue;
    }
    if (current) current.section[current.part] += `${line}\n`;
  }
  return sections;
}

function problemLine(what: string, s: Section): string {
  const err = s.err.trim() || s.out.trim() || '(no message)';
  return `${what} failed (exit code ${s.rc ?? '?'}): ${err}`;
}

/**
 * `pct list` as Proxmox prints it: a header `VMID Status Lock Name` padded with printf("%-10s %-10s %-12s %-20s"),
 * the Lock column usually blank. Values are assigned to the header column they start in, so a blank lock and a
 * lock longer than its column (`snapshot-delete`) both parse right.
 */
export function parsePctList(out: string): Target[] {
  const lines = out.split('\n').filter((l) => l.trim().length > 0);
  const headerIndex = lines.findIndex((l) => /^\s*VMID\s+Status\b/i.test(l));
  if (headerIndex < 0) return [];
  const header = lines[headerIndex];
  const columns = [...header.matchAll(/\S+/g)].map((m) => ({ name: m[0].toLowerCase(), start: m.index ?? 0 }));
  const targets: Target[] = [];
  for (const line of lines.slice(headerIndex + 1)) {
    const row: Record<string, string> = {};
    for (const token of line.matchAll(/\S+/g)) {
      const at = token.index ?? 0;
      let column = columns[0];
      for (const c of columns) if (c.start <= at) column = c;
      row[column.name] = row[column.name] ? `${row[column.name]} ${token[0]}` : token[0];
    }
    const vmid = row.vmid;
    if (!vmid || !/^\d+$/.test(vmid)) continue;
    const status = (row.status ?? '').toLowerCase();
    const state: TargetState = status === 'running' ? 'running' : status === 'stopped' ? 'stopped' : 'unknown';
    targets.push({ kind: 'pct', id: vmid, state, label: row.name || vmid });
  }
  return targets.sort((a, b) => Number(a.id) - Number(b.id));
}

/**
 * `docker ps -a --format '{{.Names}}\t{{.State}}\t{{.Status}}'`. State is running, created, restarting,
 * paused, exited, removing or dead; only `running` accepts `docker exec`, so the rest are `stopped`, except
 * `restarting`, which is neither for long. Where State is blank (old docker), Status (`Up 3 hours`) decides.
 */
export function parseDockerPs(out: string): Target[] {
  const targets: Target[] = [];
  for (const line of out.split('\n')) {
    if (!line.trim()) continue;
    const [names, rawState = '', status = ''] = line.split('\t');
    // Legacy links list several names, `a,b/c`; the first is the container's own.
    const name = names.split(',')[0].trim();
    if (!name) continue;
    targets.push({ kind: 'docker', id: name, state: dockerState(rawState.trim().toLowerCase(), status.trim()), label: name });
  }
  return targets;
}

function dockerState(state: string, status: string): TargetState {
  switch (state) {
    case 'running':
      return 'running';
    case 'created':
    case 'exited':
    case 'paused':
    case 'dead':
    case 'removing':
      return 'stopped';
    case 'restarting':
      return 'unknown';
  }
  if (/^up\b/i.test(status)) return /\(paused\)/i.test(status) ? 'stopped' : 'running';
  if (/^(exited|created|dead|removal)/i.test(status)) return 'stopped';
  return 'unknown';
}
