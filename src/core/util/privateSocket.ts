/**
 * A Unix socket server for one user's processes only (the private agent, askpass): listening in a folder the caller
 * made private (0700), the socket itself 0600; closing it drops every client at once.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';

export interface PrivateSocket {
  close(): void;
}

/** `allowHalfOpen`: a client's end of input leaves our side open, for an answer given later (askpass waits for the user). */
export async function listenPrivate(socketPath: string, onConnection: (sock: net.Socket) => void, options: { allowHalfOpen?: boolean } = {}): Promise<PrivateSocket> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: options.allowHalfOpen ?? false }, (sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => sock.destroy());
    onConnection(sock);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  fs.chmodSync(socketPath, 0o600);
  return {
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
