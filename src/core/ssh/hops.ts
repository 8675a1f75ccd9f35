/**
 * The hop chain: the jump hosts in front of a destination, dialled nearest first. The first hop is a TCP socket we
 * open ourselves; each later one is a direct-tcpip channel through the hop before it (what `ssh -J` does with
 * `-W`); over each stream, handshake.ts does the key exchange, host key check and authentication. A failure closes
 * the hops already open and names the hop it happened at.
 *
 * We create the TCP socket ourselves with TCP_NODELAY: ssh2 never sets it, and without it every small packet
 * waits ~40 ms behind Nagle and delayed ACKs.
 *
 * This folder never imports `vscode`.
 */
import * as net from 'node:net';
import type { Duplex } from 'node:stream';
import type { Client } from 'ssh2';
import { RemoteRunsError } from '../types';
import type { SecretStore } from './auth';
import { socketReason } from './clientErrors';
import { openHop, type OpenHop } from './handshake';
import type { Logger, Prompter, ResolvedHop, ResolvedHost } from './types';

/** Everything dialling one hop needs, the defaults of ConnectOptions already applied. */
export interface HopContext {
  prompter: Prompter;
  logger: Logger;
  knownHostsFiles: string[];
  /** knownHostsFiles were named for this run (CLI --known-hosts, like `ssh -o UserKnownHostsFile=`): they win over the ssh config's. */
  knownHostsPinned: boolean;
  secrets: SecretStore;
  agent: string | undefined;
  timeoutMs: number;
  keepaliveIntervalMs: number;
  keepaliveCountMax: number;
  signal?: AbortSignal;
}

/** Connect through every hop of `host`, nearest first, checking host keys and authenticating each. */
export async function dialHops(host: ResolvedHost, ctx: HopContext): Promise<OpenHop[]> {
  const hops = [...host.jumps, host.target];
  const open: OpenHop[] = [];
  try {
    for (let i = 0; i < hops.length; i++) {
      const where = describeHop(host, i);
      throwIfAborted(ctx.signal);
      const sock =
        i === 0 ? await tcpConnect(hops[i], ctx, where) : await forwardThrough(open[i - 1].client, hops[i - 1], hops[i], ctx, where);
      open.push(await openHop(hops[i], sock, ctx, where));
    }
  } catch (e) {
    for (const h of open.reverse()) h.client.end();
    throw e;
  }
  return open;
}

/** "gpu1", "jump host bastion (hop 1 of 2, for gpu1)", or "gpu1 (via bastion)": every message names the hop. */
export function describeHop(host: ResolvedHost, i: number): string {
  const hops = [...host.jumps, host.target];
  if (hops.length === 1) return host.target.alias;
  if (i < host.jumps.length) return `jump host ${hops[i].alias} (hop ${i + 1} of ${hops.length}, for ${host.target.alias})`;
  return `${host.target.alias} (via ${host.jumps.map((j) => j.alias).join(', ')})`;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new RemoteRunsError('cancelled', 'Connection attempt cancelled');
}

/** Open the first hop's TCP socket with TCP_NODELAY. */
function tcpConnect(hop: ResolvedHop, ctx: HopContext, where: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: hop.hostname, port: hop.port, noDelay: true });
    const fail = (reason: string, code?: string): void => {
      cleanup();
      sock.destroy();
      reject(
        new RemoteRunsError('unreachable', `Cannot reach ${where} at ${hop.hostname}:${hop.port}: ${reason}`, {
          hop: hop.alias,
          ...(code ? { code } : {}),
        }),
      );
    };
    const onError = (e: NodeJS.ErrnoException): void => {
      if (e.code === 'ENOTFOUND' && hop.unconfigured) {
        cleanup();
        sock.destroy();
        const hint = hop.unconfigured.closest ? ` Did you mean ${hop.unconfigured.closest}?` : '';
        reject(
          new RemoteRunsError(
            'not-found',
            `${hop.alias} is neither a configured host (settings or a Host line of the ssh config) nor a name DNS knows.${hint}`,
            { hop: hop.alias, code: e.code, ...(hop.unconfigured.closest ? { closest: hop.unconfigured.closest } : {}) },
          ),
        );
        return;
      }
      fail(socketReason(e.code, e.message), e.code);
    };
    const onAbort = (): void => {
      cleanup();
      sock.destroy();
      reject(new RemoteRunsError('cancelled', 'Connection attempt cancelled'));
    };
    const timer = setTimeout(() => fail(`no answer within ${ctx.timeoutMs / 1000} s`, 'ETIMEDOUT'), ctx.timeoutMs);
    const cleanup = (): void => {
      clearTimeout(timer);
      sock.off('error', onError);
      ctx.signal?.removeEventListener('abort', onAbort);
    };
    sock.once('error', onError);
    sock.once('connect', () => {
      cleanup();
      resolve(sock);
    });
    ctx.signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Open a direct-tcpip channel from the previous hop to this one (what `ssh -J` does with `-W`). */
function forwardThrough(prev: Client, prevHop: ResolvedHop, hop: ResolvedHop, ctx: HopContext, where: string): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      done = true;
      reject(new RemoteRunsError('unreachable', `Cannot reach ${where}: jump host ${prevHop.alias} did not open a connection to ${hop.hostname}:${hop.port} within ${ctx.timeoutMs / 1000} s`, { hop: hop.alias }));
    }, ctx.timeoutMs);
    prev.forwardOut('127.0.0.1', 0, hop.hostname, hop.port, (err, ch) => {
      clearTimeout(timer);
      if (done) {
        ch?.close();
        return;
      }
      if (err) {
        return reject(
          new RemoteRunsError('unreachable', `Cannot reach ${where}: jump host ${prevHop.alias} could not connect to ${hop.hostname}:${hop.port}: ${err.message.replace(/^\(SSH\) /, '')}`, {
            hop: hop.alias,
          }),
        );
      }
      resolve(ch);
    });
  });
}
