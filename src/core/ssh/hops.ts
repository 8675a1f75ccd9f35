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
import { Lifeline } from '../util/lifeline';
import { startProcess } from '../util/processes';
import * as net from 'node:net';
import { Duplex } from 'node:stream';
import type { Client } from 'ssh2';
import { RemoteRunsError } from '../types';
import { socketReason } from './clientErrors';
import { openHop, type HopContext, type OpenHop } from './handshake';
export type { HopContext } from './handshake';
import type { ResolvedHop, ResolvedHost } from './types';

/** Connect through every hop of `host`, nearest first, checking host keys and authenticating each. */
export async function dialHops(host: ResolvedHost, ctx: HopContext): Promise<OpenHop[]> {
  const hops = [...host.jumps, host.target];
  const open: OpenHop[] = [];
  try {
    for (let i = 0; i < hops.length; i++) {
      const where = describeHop(host, i);
      throwIfAborted(ctx.signal);
      let proxy: ProxyProcess | undefined;
      let sock: Duplex;
      if (i === 0 && hops[i].proxyCommand) {
        proxy = startProxyCommand(hops[i], ctx, where);
        sock = proxy.stream;
      } else {
        sock = i === 0 ? await tcpConnect(hops[i], ctx, where) : await forwardThrough(open[i - 1].client, hops[i - 1], hops[i], ctx, where);
      }
      try {
        open.push(await openHop(hops[i], sock, ctx, where));
      } catch (e) {
        // A proxy that died explains the failure better than "the connection closed during the handshake".
        throw proxy ? await proxy.explain(e) : e;
      }
      // The proxy lives exactly as long as the connection over it.
      if (proxy) open[i].client.once('close', proxy.stop);
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

/** A running ProxyCommand: the stream over its stdin/stdout, and how to end it. */
interface ProxyProcess {
  stream: Duplex;
  /** Kill it (SIGTERM, then SIGKILL after 2 s) unless it already exited. Idempotent. */
  stop(): void;
  /** The error to report for a handshake that failed over this proxy: its exit status and stderr, if it died. */
  explain(e: unknown): Promise<unknown>;
}

/**
 * Proxies still running are held by one lifeline: if this process dies first, however it dies (a SIGKILLed CLI, a
 * crashed extension host), they are killed. An exit hook would not run on SIGKILL, and a proxy that ignores the end
 * of its input would outlive us.
 */
let proxyLifeline: Lifeline | undefined;

/**
 * Run a ProxyCommand as ssh does (sshconnect.c ssh_proxy_connect: `$SHELL -c "exec COMMAND"`, stderr left to the
 * user, here kept for messages and the log) and return a stream over its stdin/stdout.
 */
function startProxyCommand(hop: ResolvedHop, ctx: HopContext, where: string): ProxyProcess {
  const { command, where: line } = hop.proxyCommand!;
  const shell = process.env.SHELL || '/bin/sh';
  const child = startProcess(shell, ['-c', `exec ${command}`], { stdio: ['pipe', 'pipe', 'pipe'], holder: (proxyLifeline ??= new Lifeline()) });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => {
    if (stderr.length < 4096) stderr += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>((resolve) => {
    child.once('error', (error) => resolve({ code: null, signal: null, error }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  void exited.then(() => {
    if (stderr.trim()) ctx.logger.warn(`ProxyCommand of ${where} said: ${stderr.trim()}`);
  });
  ctx.logger.info(`Connecting to ${where} through ProxyCommand (${line})`);
  const stream = Duplex.from({ readable: child.stdout!, writable: child.stdin! });
  // ssh2 ending its side is the end of the connection: the proxy has nothing left to carry.
  stream.once('finish', () => stop());
  stream.once('close', () => stop());
  stream.on('error', () => undefined); // reported through the handshake or the connection's close
  let killTimer: NodeJS.Timeout | undefined;
  const stop = (): void => {
    if (child.exitCode !== null || child.signalCode !== null || killTimer) return;
    child.kill('SIGTERM');
    killTimer = setTimeout(() => child.kill('SIGKILL'), 2000);
    killTimer.unref();
    void exited.then(() => clearTimeout(killTimer));
  };
  return {
    stream,
    stop,
    explain: async (e) => {
      if (e instanceof RemoteRunsError && e.kind !== 'unreachable') {
        stop();
        return e;
      }
      const done = await Promise.race([exited, new Promise<undefined>((r) => setTimeout(r, 500))]);
      stop();
      if (!done) return e;
      const how = done.error ? `could not be started (${done.error.message})` : done.code !== null ? `exited with status ${done.code}` : `was killed (${done.signal})`;
      const said = stderr.trim() ? `: ${stderr.trim().split('\n').slice(-3).join(' / ')}` : '';
      return new RemoteRunsError('unreachable', `Cannot reach ${where}: its ProxyCommand (${line}) ${how}${said}`, { hop: hop.alias, proxyCommand: line });
    },
  };
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
