/**
 * The demo SSH server, on ssh2's own server side: bound to 127.0.0.1 only, one host key, one accepted client key
 * (public-key authentication only; passwords, keyboard-interactive, `none` and every other key are refused). Exec
 * requests run as sshd runs them (`/bin/sh -c LINE`, exit code or signal passed back, `signal` requests sent to the
 * command's process group), but inside the demo machine (sandbox.ts). Shell requests get a login shell on a
 * pseudo-terminal; the SFTP subsystem serves the machine's files read-only (sftp.ts). Direct-tcpip channels (a client's
 * port forwarding, `ssh -L`, or the eval's channels to a server) are opened only to the addresses of `forwards`, the
 * demo host's own services (the drafter server, specServer.ts), as sshd under `PermitOpen` would; any other address
 * fails to connect (SSH_OPEN_CONNECT_FAILED, what sshd answers when nothing listens there).
 */
import { timingSafeEqual } from 'node:crypto';
import { signalProcess, type ChildProcess } from '../core/util/processes';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Server, utils, type Connection, type ServerChannel, type Session } from 'ssh2';
import type { DemoMachine } from './sandbox';
import { serveSftp } from './sftp';

/** The only address the demo server ever listens on. */
export const DEMO_BIND_ADDRESS = '127.0.0.1';

export interface DemoServerOptions {
  hostKey: Buffer;
  /** `ssh-ed25519 AAAA…` of the one client key accepted. */
  clientPublicKey: string;
  machine: DemoMachine;
  /** Must be 127.0.0.1 (the default); anything else throws before a socket is opened. */
  bindAddress?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  /** Log lines (logins, refusals); default none. */
  log?: (line: string) => void;
  /**
   * The demo host's services a direct-tcpip channel may reach: `127.0.0.1:PORT` as the demo host sees it, to the real
   * loopback port its server listens on. Default none.
   */
  forwards?: readonly DemoForward[];
}

/** One service of the demo host: its address there, and where it really listens (on the real 127.0.0.1). */
export interface DemoForward {
  host: string;
  port: number;
  /** The real loopback port. */
  to: number;
}

/** The real port a channel to `host:port` of the demo host goes to, or undefined (refused). `localhost` is 127.0.0.1. */
export function forwardTarget(forwards: readonly DemoForward[] | undefined, host: string, port: number): number | undefined {
  const h = host === 'localhost' ? DEMO_BIND_ADDRESS : host;
  return forwards?.find((f) => f.host === h && f.port === port)?.to;
}

export interface DemoServer {
  port: number;
  address: string;
  /** Connections refused during authentication so far (tests count them). */
  refusedLogins(): number;
  /** Close the listener and every connection (commands are ended with the machine, not here). */
  stop(): Promise<void>;
}

/** Throws unless `address` is the IPv4 loopback address: the demo is never reachable from another machine. */
export function assertLoopbackBind(address: string): void {
  if (address !== DEMO_BIND_ADDRESS) {
    throw new Error(`The demo host only listens on ${DEMO_BIND_ADDRESS}, never on ${JSON.stringify(address)}`);
  }
}

/** Start the demo server. Resolves once it listens. */
export async function startDemoServer(options: DemoServerOptions): Promise<DemoServer> {
  const address = options.bindAddress ?? DEMO_BIND_ADDRESS;
  assertLoopbackBind(address);
  const allowed = utils.parseKey(options.clientPublicKey);
  if (allowed instanceof Error) throw new Error(`bad demo client key: ${allowed.message}`);
  const allowedKey = Array.isArray(allowed) ? allowed[0] : allowed;
  const allowedBlob = allowedKey.getPublicSSH();
  const log = options.log ?? (() => undefined);
  const clients = new Set<Connection>();
  let refused = 0;

  const server = new Server({ hostKeys: [options.hostKey], ident: 'OpenSSH_9.2p1 remote-runs-demo' }, (client) => {
    clients.add(client);
    let accepted = false;
    client.on('authentication', (ctx) => {
      if (ctx.method !== 'publickey') return ctx.reject(['publickey']);
      const sameKey = ctx.key.algo === allowedKey.type && ctx.key.data.length === allowedBlob.length && timingSafeEqual(ctx.key.data, allowedBlob);
      if (!sameKey) {
        refused++;
        log(`refused a key that is not the demo client key (${ctx.key.algo})`);
        return ctx.reject(['publickey']);
      }
      // Without a signature the client only asks whether this key would do; with one, it must verify.
      if (ctx.signature && ctx.blob && allowedKey.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) {
        refused++;
        return ctx.reject(['publickey']);
      }
      if (ctx.signature) accepted = true;
      ctx.accept();
    });
    client.on('ready', () => {
      if (!accepted) return client.end();
      log('client logged in');
      client.on('session', (accept) => handleSession(accept(), options.machine));
      client.on('tcpip', (accept, reject, info) => forward(accept, reject, info, options.forwards, log));
    });
    client.on('error', () => undefined); // a client that vanished; nothing to do
    client.on('close', () => clients.delete(client));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, address, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  return {
    port: bound.port,
    address: bound.address,
    refusedLogins: () => refused,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const c of clients) c.end();
        server.close(() => resolve());
      }),
  };
}

/**
 * A direct-tcpip channel: connected to the service's real port, bytes both ways, each side's end ending the other;
 * refused (connect failed) for an address that is not one of the demo host's services, or when its server is down.
 */
function forward(accept: () => ServerChannel, reject: () => void, info: { destIP: string; destPort: number }, forwards: readonly DemoForward[] | undefined, log: (line: string) => void): void {
  const to = forwardTarget(forwards, info.destIP, info.destPort);
  if (to === undefined) {
    log(`refused a channel to ${info.destIP}:${info.destPort}: nothing of the demo host listens there`);
    return reject();
  }
  const socket = net.connect(to, DEMO_BIND_ADDRESS);
  socket.once('error', () => reject());
  socket.once('connect', () => {
    const channel = accept();
    socket.on('error', () => channel.destroy());
    channel.on('error', () => socket.destroy());
    socket.pipe(channel);
    channel.pipe(socket);
    channel.on('close', () => socket.destroy());
  });
}

/** One session channel: env, pty, exec, shell, sftp, signal, as sshd handles them. */
function handleSession(session: Session, machine: DemoMachine): void {
  const env: Record<string, string> = {};
  let pty: { rows: number; cols: number; term: string } | undefined;
  let child: ChildProcess | undefined;

  session.on('env', (accept, _reject, info) => {
    // Only plain names; the machine's own PATH and HOME stay.
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(info.key) && !['PATH', 'HOME', 'LD_PRELOAD', 'LD_LIBRARY_PATH'].includes(info.key)) env[info.key] = info.val;
    accept?.();
  });
  session.on('pty', (accept, _reject, info) => {
    pty = { rows: info.rows || 24, cols: info.cols || 80, term: info.term || 'xterm-256color' };
    accept?.();
  });
  session.on('window-change', (accept) => accept?.()); // no resize through `script`; the size stays as first asked
  session.on('signal', (accept, _reject, info) => {
    accept?.();
    if (child) signalProcess(child, `SIG${info.name}` as NodeJS.Signals, { group: true });
  });
  session.on('exec', (accept, _reject, info) => {
    const stream = accept();
    child = machine.spawn(info.command, { env, pty: pty && { rows: pty.rows, cols: pty.cols } });
    pipe(child, stream);
  });
  session.on('shell', (accept) => {
    const stream = accept();
    child = machine.spawn(undefined, { env: { ...env, TERM: pty?.term ?? 'dumb' }, pty: pty ?? { rows: 24, cols: 80 } });
    pipe(child, stream);
  });
  session.on('sftp', (accept) => serveSftp(accept(), machine.root));
}

/**
 * Connect a command to its channel, and report its exit as sshd does: everything the command wrote, on stdout and
 * stderr, reaches the client before its exit status and the channel's end.
 *
 * ssh2 (1.17) shares one channel window between stdout and stderr and serves a waiting stdout write first on every
 * window adjustment, so a stderr write that found the window empty waits until stdout is idle; and ending stdout
 * closes the channel at once, dropping a stderr write still waiting. A command that keeps stdout busy to its end and
 * writes one last stderr line (a download's `rr-sha256` line, remoteCommands.ts) lost that line every time the
 * window was full when it came: interrupted 3 GB downloads then failed once near their end. So the two streams go
 * out through one queue, one write at a time, each waiting for the window, and the command's output is paused while
 * the queue holds more than QUEUE_PAUSE_BYTES (the window is the only limit otherwise: a fast command's output piled
 * up in memory). The channel's end waits for the queue to empty.
 */
function pipe(child: ChildProcess, stream: ServerChannel): void {
  const queue: { err: boolean; data: Buffer }[] = [];
  let queued = 0;
  let writing = false;
  let closed = false;
  let exit: (() => void) | undefined;
  const paused = (): boolean => queued > QUEUE_PAUSE_BYTES;
  const next = (): void => {
    if (writing || closed) return;
    const item = queue.shift();
    if (!item) {
      exit?.();
      exit = undefined;
      return;
    }
    writing = true;
    (item.err ? stream.stderr : stream).write(item.data, () => {
      writing = false;
      queued -= item.data.length;
      forgetSentChunk(stream);
      if (!paused()) {
        child.stdout?.resume();
        child.stderr?.resume();
      }
      next();
    });
  };
  const send = (err: boolean) => (data: Buffer): void => {
    if (closed) return;
    queue.push({ err, data });
    queued += data.length;
    if (paused()) {
      child.stdout?.pause();
      child.stderr?.pause();
    }
    next();
  };
  child.stdout?.on('data', send(false));
  child.stderr?.on('data', send(true));
  stream.on('data', (b: Buffer) => child.stdin?.write(b));
  stream.on('end', () => child.stdin?.end());
  child.stdin?.on('error', () => undefined); // the command ended before reading its input
  stream.on('error', () => undefined);
  // The client went away: drop our ends of the pipes, so a command that still writes gets SIGPIPE as under sshd.
  stream.on('close', () => {
    closed = true;
    queue.length = 0;
    child.stdout?.destroy();
    child.stderr?.destroy();
    child.stdin?.destroy();
  });
  const finish = (how: () => void): void => {
    exit = () => {
      if (stream.destroyed || closed) return;
      how();
      stream.end();
    };
    next();
  };
  child.on('error', (e) => {
    send(true)(Buffer.from(`remote-runs-demo: ${e.message}\n`));
    finish(() => stream.exit(255));
  });
  child.on('close', (code, signal) => finish(() => (signal ? stream.exit(signal.replace(/^SIG/, ''), false, '') : stream.exit(code ?? 255))));
}

/** Output queued for the channel before the command is paused: one window's worth (2 MiB). */
const QUEUE_PAUSE_BYTES = 2 << 20;

/**
 * ssh2 keeps the rest of a stdout write that waited for the window (`_chunk`) after sending it, and sends it again
 * when a stderr write is the one waiting at the next window adjustment. With one write at a time, nothing waits once
 * a write's callback has run: forget it.
 */
function forgetSentChunk(stream: ServerChannel): void {
  const s = stream as unknown as { _chunk?: Buffer; _chunkcb?: unknown; _chunkErr?: Buffer; _chunkcbErr?: unknown };
  s._chunk = undefined;
  s._chunkcb = undefined;
  s._chunkErr = undefined;
  s._chunkcbErr = undefined;
}
