/**
 * Which host and target a reference belongs to. In order: what the command itself says (`ssh HOST`, `HOST:path`,
 * `pct exec ID`, `docker exec NAME`), the `remoteRuns.pathMappings` entry of the document's workspace folder, a
 * `remote-runs: host/target` comment in the file; a bare path with none of these belongs to the one place where it
 * exists (decided by the server, which probes the candidates).
 */
import type { ConfigResult, HostInfo, Place } from '../shared/lspProtocol';
import type { PathRef } from './finder';

/** A configured host named as the text names it: by name, ssh alias/address, or `user@address`. */
export function hostNamed(hosts: readonly HostInfo[], written: string, user?: string): HostInfo | undefined {
  return (
    hosts.find((h) => h.name === written) ??
    hosts.find((h) => h.address === written && (!user || !h.user || h.user === user)) ??
    hosts.find((h) => h.address === written)
  );
}

/** The place every bare path of a document belongs to, from the mapping setting or the file's comment. */
export function documentPlace(config: ConfigResult, uri: string, comment?: { host: string; target: string }): Place | undefined {
  // A notebook cell (`vscode-notebook-cell:/…/nb.ipynb#cell`) belongs to its notebook's folder.
  const documentUri = uri.replace(/^vscode-notebook-cell:(\/\/)?/, 'file://').replace(/#.*$/, '');
  const mapping = config.mappings
    .filter((m) => documentUri === m.folderUri || documentUri.startsWith(m.folderUri.endsWith('/') ? m.folderUri : `${m.folderUri}/`))
    .sort((a, b) => b.folderUri.length - a.folderUri.length)[0];
  if (mapping) return mapping.place;
  if (comment) {
    const host = hostNamed(config.hosts, comment.host);
    return { host: host?.name ?? comment.host, target: comment.target };
  }
  return undefined;
}

export type Resolution =
  | { kind: 'place'; place: Place }
  /** The command names a host that is not configured: nothing can be said about it. */
  | { kind: 'unknown-host'; host: string }
  /** A bare path: the server probes these places and keeps the one where it exists. */
  | { kind: 'probe'; target?: string };

/** Where a reference belongs, or how to find out. */
export function resolveRef(ref: PathRef, config: ConfigResult, docPlace: Place | undefined): Resolution {
  if (ref.host !== undefined) {
    const host = hostNamed(config.hosts, ref.host, ref.user);
    if (!host) return { kind: 'unknown-host', host: ref.host };
    return { kind: 'place', place: { host: host.name, target: ref.target ?? 'host' } };
  }
  if (docPlace) return { kind: 'place', place: { host: docPlace.host, target: ref.target ?? docPlace.target } };
  return { kind: 'probe', ...(ref.target ? { target: ref.target } : {}) };
}

/** Run roots of the host a place is on (empty when the host is not configured). */
export function rootsOf(config: ConfigResult, hostName: string): string[] {
  return config.hosts.find((h) => h.name === hostName)?.roots ?? [];
}

/** Every run root of every host: what makes a bare path a reference. */
export function allRoots(config: ConfigResult): string[] {
  return [...new Set(config.hosts.flatMap((h) => h.roots))];
}
