/**
 * HTTP/1.1 to a server as the training host sees it, through the host's SSH link: every request opens a direct-tcpip
 * channel from the host to the server's address (`SshConnection.forwardOut`, on a lease of the host's pool entry) and
 * Node's own HTTP client speaks over it (`http.request` with `createConnection` returning the channel: one request per
 * channel, `Connection: close`). So a server bound to the training network's address (or to the host's loopback) is
 * reached with no port opened anywhere, and the pool stays the one owner of the link.
 *
 * The one mechanism for talking to an eval server: nothing else in the core opens a socket to it.
 */
import * as http from 'node:http';
import type { Duplex } from 'node:stream';
import { RemoteRunsError } from '../../../types';
import type { ConnectionPool, PoolHost } from '../../../ssh/pool';
import type { Transport } from '../../../ssh/transport';

/** Where the server is, as seen from the host: `http://ADDRESS:PORT` (a path prefix such as `/v1` is not part of it). */
export interface ServerAddress {
  host: string;
  port: number;
  /** The URL as the user wrote it, for messages. */
  url: string;
}

/** Parse `http://host:port` (https is refused: TLS to an inference server inside the training network is not supported). */
export function parseServerUrl(url: string): ServerAddress {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new RemoteRunsError('bad-config', `server: ${JSON.stringify(url)} is not a URL; write it as the training host reaches the server, e.g. "http://10.0.0.5:30000"`, { field: 'server' });
  }
  if (u.protocol !== 'http:') throw new RemoteRunsError('bad-config', `server: ${JSON.stringify(url)} uses ${u.protocol.replace(/:$/, '')}; only plain http:// is supported (the SSH link already encrypts the traffic)`, { field: 'server' });
  if (u.pathname !== '/' && u.pathname !== '') throw new RemoteRunsError('bad-config', `server: ${JSON.stringify(url)} has a path (${u.pathname}); give only http://host:port, the eval adds /v1/… itself`, { field: 'server' });
  const port = u.port === '' ? 80 : Number(u.port);
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  return { host, port, url: `http://${u.host}` };
}

/** What a request returns: status and the whole body as text. */
export interface HttpReply {
  status: number;
  body: string;
}

/** A channel to the server; each call opens a new one. */
export type OpenChannel = () => Promise<Duplex>;

/**
 * One HTTP request over a channel `open` gives. A body object is sent as JSON. Rejects `cancelled` on `signal`,
 * `protocol` when the server closes the channel without a whole reply.
 */
export function httpRequest(open: OpenChannel, address: ServerAddress, method: 'GET' | 'POST', path: string, body?: unknown, signal?: AbortSignal): Promise<HttpReply> {
  return new Promise<HttpReply>((resolve, reject) => {
    if (signal?.aborted) return reject(new RemoteRunsError('cancelled', `cancelled before ${method} ${path}`));
    open().then(
      (channel) => {
        const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), 'utf8');
        // `new ClientRequest`, not `http.request`: VS Code's extension host replaces the `http` module's `request`
        // and `get` for its proxy support (src/vs/workbench/api/node/proxyResolver.ts, @vscode/proxy-agent), giving
        // the request an agent of its own, and an agent dials host:port itself, past the channel.
        const req = new http.ClientRequest({
          method,
          path,
          host: address.host,
          port: address.port,
          // No `agent`: Node uses `createConnection` only when no agent is given (node:_http_client ClientRequest:
          // `agent: false` makes a fresh Agent, whose own net.createConnection then dials host:port directly from this
          // machine, past the SSH link; a server on this machine's loopback answered that way unnoticed).
          createConnection: () => channel as unknown as import('node:net').Socket,
          headers: {
            Host: `${address.host}:${address.port}`,
            Connection: 'close',
            Accept: 'application/json, text/plain',
            ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': String(payload.length) } : {}),
          },
        });
        const cancelled = new RemoteRunsError('cancelled', `cancelled during ${method} ${path}`);
        // Destroying the request closes the channel; the error it then reports ("socket hang up") is the cancel's.
        const onAbort = (): void => {
          req.destroy(cancelled);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            signal?.removeEventListener('abort', onAbort);
            channel.destroy();
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
          });
          res.on('error', (e) => {
            signal?.removeEventListener('abort', onAbort);
            channel.destroy();
            reject(signal?.aborted ? cancelled : asProtocol(e, address, method, path));
          });
        });
        req.on('error', (e) => {
          signal?.removeEventListener('abort', onAbort);
          channel.destroy();
          reject(signal?.aborted ? cancelled : asProtocol(e, address, method, path));
        });
        req.end(payload);
      },
      (e: unknown) => reject(e),
    );
  });
}

function asProtocol(e: unknown, address: ServerAddress, method: string, path: string): RemoteRunsError {
  if (e instanceof RemoteRunsError) return e;
  return new RemoteRunsError('protocol', `${method} ${address.url}${path}: the server closed the connection without a whole HTTP reply (${(e as Error).message})`);
}

/** A lease of the host's connection that opens channels to one server address. */
export interface ServerLink {
  open: OpenChannel;
  /** Release the lease (the pool then idles the connection out as it does any other). */
  dispose(): void;
}

/**
 * Lease the host's connection from the pool and open channels to `address` through it. The link must be the
 * built-in client's (ssh2): a host the pool reaches through the system's OpenSSH (certificates, security keys, GSSAPI)
 * has no channel forwarding here, and gets an error that says so. A channel that the host cannot open (nothing
 * listens there, no route) becomes `unreachable` naming the host, the address, and that the link itself is up.
 */
export async function linkToServer(pool: ConnectionPool, host: PoolHost, address: ServerAddress, signal?: AbortSignal): Promise<ServerLink> {
  let lease;
  try {
    // Channel forwarding is the built-in client's: a link opened through OpenSSH by preference is let go for it.
    lease = await pool.acquire(host, signal, { builtIn: true });
  } catch (e) {
    if (e instanceof RemoteRunsError && e.kind === 'cancelled') throw e;
    const why = e instanceof Error ? e.message : String(e);
    throw new RemoteRunsError(e instanceof RemoteRunsError ? e.kind : 'unreachable', `cannot reach the eval server ${address.url}: the SSH link to ${host.name} itself is down (${why})`, { host: host.name, server: address.url, link: 'down' });
  }
  const connection: Transport = lease.connection;
  const forward = (connection as Partial<{ forwardOut(h: string, p: number): Promise<Duplex> }>).forwardOut;
  if (connection.kind !== 'ssh2' || typeof forward !== 'function') {
    lease.dispose();
    throw new RemoteRunsError('bad-config', `cannot reach the eval server ${address.url} through ${host.name}: this host is reached with the system's OpenSSH client, and the eval opens its channels with the built-in client only; run the eval from a host entry the built-in client can log in to`, { host: host.name, server: address.url });
  }
  return {
    open: async () => {
      try {
        return await forward.call(connection, address.host, address.port);
      } catch (e) {
        const why = e instanceof Error ? e.message.replace(/^.*could not connect to [^:]+:\d+: /, '') : String(e);
        const up = !connection.isClosed;
        if (e instanceof RemoteRunsError && e.detail.openFailure === 1) {
          // SSH_OPEN_ADMINISTRATIVELY_PROHIBITED: OpenSSH's sshd refuses direct-tcpip channels under AllowTcpForwarding
          // no (or local), DisableForwarding, or a PermitOpen that does not list the address (serverloop.c
          // server_request_direct_tcpip), answering "open failed".
          throw new RemoteRunsError(
            'unreachable',
            `the eval server ${address.url} cannot be reached through ${host.name}: the SSH link to ${host.name} is up, but its sshd refuses to forward to ${address.host}:${address.port} (${why}: AllowTcpForwarding no, DisableForwarding yes, or a PermitOpen that does not list it). Ask for forwarding to that address on ${host.name}, or run the eval through another host that can reach the server`,
            { host: host.name, server: address.url, link: 'up', forwarding: 'refused' },
          );
        }
        throw new RemoteRunsError(
          'unreachable',
          up
            ? `the eval server ${address.url} cannot be reached from ${host.name}: the SSH link to ${host.name} is up, but ${host.name} could not connect to ${address.host}:${address.port} (${why}). Is the server running and listening on that address as ${host.name} sees it (not 127.0.0.1 of another machine)?`
            : `the eval server ${address.url} cannot be reached: the SSH link to ${host.name} went down (${why})`,
          { host: host.name, server: address.url, link: up ? 'up' : 'down' },
        );
      }
    },
    dispose: () => lease.dispose(),
  };
}
