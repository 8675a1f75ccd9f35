/**
 * A TCP proxy on 127.0.0.1 in front of a test server, run inside the test's own process: a link the test controls.
 *
 * - `rateBytesPerSec` caps each direction, so a transfer lasts long enough to be interrupted in its middle;
 * - `hold()` closes a gate on the server → client direction: nothing more reaches the client until `release()`, and
 *   `bytesDown` says how much had passed, so a test can prove that a download was still in flight when it struck
 *   (a gate, not a race against a fast copy); `hold('up')` holds what the client sends instead (`bytesFromClient`
 *   counts what it sent all the same), so a request is provably unanswered when the server is killed;
 * - `delayMs` delays both directions (a long link, for benchmarks), with at most `maxBufferedBytes` queued per
 *   direction before the sending side is paused (TCP back-pressure, as a real link's buffers give).
 *
 * Only loopback: the proxy listens on 127.0.0.1 and connects to 127.0.0.1.
 */
import * as net from 'node:net';

export interface TcpProxyOptions {
  /** Bytes per second in each direction; unlimited when absent. */
  rateBytesPerSec?: number;
  /** One-way delay of every byte, both directions (the round trip is twice this). */
  delayMs?: number;
  /** Bytes queued per direction before the source is paused (default 4 MiB). */
  maxBufferedBytes?: number;
  /** Listen on this port (a link brought back up where it was); default: a free one. */
  port?: number;
}

export interface TcpProxy {
  /** The port to connect to instead of the server's. */
  readonly port: number;
  /** Bytes forwarded server → client so far, over all connections. */
  readonly bytesDown: number;
  /** Bytes received from clients so far (forwarded or held), over all connections. */
  readonly bytesFromClient: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Close the gate on one direction (default: server → client) of every connection, present and future. */
  hold(direction?: 'down' | 'up'): void;
  /**
   * Close the server → client gate once `bytes` more have gone down (to the 64 KiB chunk): a point in a transfer
   * reached exactly, however late the test looks.
   */
  holdAfter(bytes: number): void;
  /** Open both gates again. */
  release(): void;
  /** Stop listening and cut every connection. */
  close(): Promise<void>;
}

const CHUNK = 64 * 1024;

/** One direction of one connection: a queue of chunks, each leaving at its due time and no faster than the rate. */
class Lane {
  private readonly queue: { buf: Buffer; due: number }[] = [];
  private queued = 0;
  private nextFree = 0;
  private timer: NodeJS.Timeout | undefined;
  private draining = false;
  private ended = false;

  constructor(
    private readonly src: net.Socket,
    private readonly dst: net.Socket,
    private readonly opts: Required<Omit<TcpProxyOptions, 'port'>>,
    private readonly held: () => boolean,
    private readonly count: (n: number) => void,
    private readonly received: (n: number) => void = () => undefined,
  ) {
    src.on('data', (d: Buffer) => {
      this.received(d.length);
      this.push(d);
    });
    src.on('end', () => {
      this.ended = true;
      this.flush();
    });
    dst.on('drain', () => {
      this.draining = false;
      this.flush();
    });
  }

  private push(d: Buffer): void {
    const due = Date.now() + this.opts.delayMs;
    for (let o = 0; o < d.length; o += CHUNK) {
      const buf = d.subarray(o, Math.min(o + CHUNK, d.length));
      this.queue.push({ buf, due });
      this.queued += buf.length;
    }
    if (this.queued > this.opts.maxBufferedBytes) this.src.pause();
    this.flush();
  }

  flush(): void {
    if (this.timer || this.draining || this.dst.destroyed) return;
    while (this.queue.length > 0 && !this.held()) {
      const now = Date.now();
      const head = this.queue[0]!;
      const at = Math.max(head.due, this.nextFree);
      if (at > now) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.flush();
        }, at - now);
        return;
      }
      this.queue.shift();
      this.queued -= head.buf.length;
      if (this.opts.rateBytesPerSec > 0) this.nextFree = Math.max(this.nextFree, now) + (head.buf.length / this.opts.rateBytesPerSec) * 1000;
      this.count(head.buf.length);
      if (!this.dst.write(head.buf)) {
        this.draining = true;
        break;
      }
    }
    if (this.queued <= this.opts.maxBufferedBytes && this.src.isPaused()) this.src.resume();
    if (this.queue.length === 0 && this.ended) this.dst.end();
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** Starts a proxy to 127.0.0.1:`targetPort`. */
export async function startTcpProxy(targetPort: number, options: TcpProxyOptions = {}): Promise<TcpProxy> {
  const opts: Required<Omit<TcpProxyOptions, 'port'>> = {
    rateBytesPerSec: options.rateBytesPerSec ?? 0,
    delayMs: options.delayMs ?? 0,
    maxBufferedBytes: options.maxBufferedBytes ?? 4 * 1024 * 1024,
  };
  const held = { down: false, up: false };
  let bytesDown = 0;
  let holdAtDown = Infinity;
  let bytesFromClient = 0;
  const lanes = new Set<Lane>();
  let accepted = 0;
  const sockets = new Set<net.Socket>();

  const server = net.createServer((client) => {
    accepted++;
    const upstream = net.connect({ host: '127.0.0.1', port: targetPort, noDelay: true });
    client.setNoDelay(true);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    const up = new Lane(client, upstream, opts, () => held.up, () => undefined, (n) => (bytesFromClient += n));
    const down = new Lane(upstream, client, opts, () => held.down, (n) => {
      bytesDown += n;
      if (bytesDown >= holdAtDown) {
        held.down = true;
        holdAtDown = Infinity;
      }
    });
    lanes.add(up);
    lanes.add(down);
    // Either side failing or closing without an end cuts the other: a dead server is a dead link.
    const cut = (): void => {
      up.dispose();
      down.dispose();
      lanes.delete(up);
      lanes.delete(down);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', cut);
    upstream.on('error', cut);
    client.on('close', cut);
    upstream.on('close', () => {
      // A server that ended cleanly has its last bytes delivered first (the down lane ends the client when empty).
      if (!upstream.readableEnded) cut();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;

  return {
    port,
    get bytesDown() {
      return bytesDown;
    },
    get bytesFromClient() {
      return bytesFromClient;
    },
    get accepted() {
      return accepted;
    },
    hold(direction = 'down') {
      held[direction] = true;
    },
    holdAfter(bytes) {
      holdAtDown = bytesDown + bytes;
    },
    release() {
      holdAtDown = Infinity;
      held.down = false;
      held.up = false;
      for (const l of lanes) l.flush();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        for (const l of lanes) l.dispose();
        server.close(() => resolve());
      }),
  };
}
