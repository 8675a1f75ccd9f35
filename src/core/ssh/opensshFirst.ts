/**
 * Whether a host with no link up may get the system's OpenSSH as its first link (the OpenSSH transport,
 * openssh/connection.ts) instead of the built-in client, for a caller whose work is mostly bytes that `ssh` moves
 * faster (the CLI's pull: ConnectionPool's `opensshFirst`). The built-in client would log in first and the download
 * would then log in a second time, through an OpenSSH session pinned to the host keys the first one verified
 * (openssh/session.ts): two logins in a row, the larger part of a cold pull's time on a short link.
 *
 * OpenSSH first must change nothing the user sees but the time, so it is tried only where that login can run without
 * asking anything, the same checks passing as on the built-in client's path:
 *
 * - **Every hop's host key is known**: known_hosts (the files the hop is checked against, hostKeyPolicy.ts
 *   knownHostsFor) holds a plain key for its name. ssh then checks the key it is shown against them, strictly (the
 *   transport's wrapper config never sets `StrictHostKeyChecking no`), and prefers the known key types in the key
 *   exchange as the built-in client does (OpenSSH sshconnect2.c, order_hostkeyalgs). A host not known yet keeps the
 *   built-in client, whose question (or refusal without a terminal) is today's.
 * - **Every hop can log in with a key without a prompt**: an agent (the hop's IdentityAgent or the pool's), or an
 *   identity file that exists and needs no passphrase. Passwords, one-time codes and encrypted keys are asked for by
 *   the built-in client as today.
 *
 * - **No ProxyCommand on the way**: the built-in client runs it as its own child, held by a lifeline
 *   (util/lifeline.ts) so that it ends with the link; the transport's master runs it as ssh's, and a master killed on
 *   close does not get to end it.
 *
 * Anything else (a key the server refuses, an agent without the right key, another host key than known_hosts
 * holds, no `ssh` binary) fails the OpenSSH login, and the pool connects with the built-in client after it, as it
 * would have without the option: the same checks and messages as today (ConnectionPool.connectWithBackoff).
 *
 * This folder never imports `vscode`.
 */
import { promises as fs } from 'node:fs';
import { utils } from 'ssh2';
import { knownHostsFor } from './hostKeyPolicy';
import { knownHostsName, knownKeyTypes, readKnownHostsFiles } from './knownHosts';
import type { ResolvedHop, ResolvedHost } from './types';

export interface OpenSshFirstContext {
  /** The pool's known_hosts files and whether they were named for this run (as ConnectOptions). */
  knownHostsFiles: string[];
  knownHostsPinned: boolean;
  /** The pool's agent socket: undefined is SSH_AUTH_SOCK, null none. */
  agent: string | null | undefined;
}

/**
 * Why the host cannot have OpenSSH as its first link without asking anything (one sentence, for the log), or
 * undefined when it can. Reads the known_hosts and identity files; never asks, never connects.
 */
export async function whyNotOpenSshFirst(host: ResolvedHost, ctx: OpenSshFirstContext): Promise<string | undefined> {
  // The transport's askpass is a Unix socket (openssh/connection.ts).
  if (process.platform === 'win32') return 'the OpenSSH transport is not used on Windows';
  for (const hop of [...host.jumps, host.target]) {
    // The built-in client runs a ProxyCommand itself, held on this process's lifeline so that it ends with the link;
    // under the transport it is ssh's child, which a master killed on close leaves running.
    if (hop.proxyCommand) return `${hop.alias} is reached through a ProxyCommand (${hop.proxyCommand.where}), which the built-in client runs and ends with its link`;
    const known = knownHostsFor(hop, { knownHostsFiles: ctx.knownHostsFiles, knownHostsPinned: ctx.knownHostsPinned, logger: SILENT });
    const files = await readKnownHostsFiles(known.files);
    const name = hop.hostKeyAlias ?? knownHostsName(hop.hostname, hop.port);
    const lookup = hop.hostKeyAlias !== undefined ? { hostname: hop.hostKeyAlias, port: 22 } : { hostname: hop.hostname, port: hop.port };
    if (knownKeyTypes(files, lookup.hostname, lookup.port).length === 0) {
      return `no host key of ${hop.alias} is known yet (${name} in ${known.files.join(', ') || 'no known_hosts file'}): the built-in client checks it and asks`;
    }
    if (!(await logsInWithoutPrompt(hop, ctx.agent))) {
      return `${hop.alias} has neither an agent nor an identity file without a passphrase: the built-in client logs in and asks`;
    }
  }
  return undefined;
}

const SILENT = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** An agent the hop would use, or an identity file of it that exists and parses without a passphrase. */
async function logsInWithoutPrompt(hop: ResolvedHop, poolAgent: string | null | undefined): Promise<boolean> {
  // The hop's IdentityAgent wins over the pool's (null: `IdentityAgent none`), as for ssh.
  const agent = hop.identityAgent !== undefined ? hop.identityAgent : poolAgent === null ? undefined : (poolAgent ?? process.env.SSH_AUTH_SOCK);
  if (agent) {
    const st = await fs.stat(agent).catch(() => undefined);
    if (st?.isSocket()) return true;
  }
  for (const file of hop.identityFiles) {
    const data = await fs.readFile(file).catch(() => undefined);
    if (!data) continue;
    const parsed = utils.parseKey(data);
    const key = Array.isArray(parsed) ? parsed[0] : parsed;
    if (key && !(key instanceof Error) && key.isPrivateKey()) return true;
  }
  return false;
}
