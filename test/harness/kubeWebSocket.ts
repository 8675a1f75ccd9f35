/**
 * The server side of RFC 6455 as the test API server (kubeApi.ts) needs it for `pods/exec`: the handshake, masked
 * client frames in, unmasked binary frames out, ping answered by pong, close answered by close. No extensions (no
 * permessage-deflate: kubectl's gorilla/websocket dialer does not ask for it), no fragmented sends.
 *
 * On top of it, the Kubernetes channel protocol (apimachinery `pkg/util/remotecommand/constants.go`, client-go
 * `tools/remotecommand/websocket.go`): every binary message starts with one channel byte — 0 stdin, 1 stdout,
 * 2 stderr, 3 error (a `metav1.Status` JSON), 4 resize — and `v5.channel.k8s.io` adds 255 = CLOSE, whose one payload
 * byte names the stream the peer has finished writing (client-go `stream.Close` sends `[255, 0]` when stdin ends).
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** Channel numbers (apimachinery pkg/util/remotecommand/constants.go). */
export const CHANNEL = { stdin: 0, stdout: 1, stderr: 2, error: 3, resize: 4, close: 255 } as const;
export const PROTOCOL_V5 = 'v5.channel.k8s.io';
export const PROTOCOL_V4 = 'v4.channel.k8s.io';

/** The subprotocols a client offered (`Sec-WebSocket-Protocol`, comma separated), in its order. */
export function offeredProtocols(req: IncomingMessage): string[] {
  return String(req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Whether this request asks for a WebSocket upgrade. */
export function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return String(req.headers.upgrade ?? '').toLowerCase() === 'websocket' && typeof req.headers['sec-websocket-key'] === 'string';
}

/** Messages and the end of one upgraded connection. */
export interface WsConnection {
  /** Send one binary message: the channel byte, then `data`. Returns false when the socket's buffer is full. */
  send(channel: number, data?: Buffer): boolean;
  /** A close frame (1000, normal closure), then the end of the socket. */
  close(): void;
  /** Destroy the socket without a close frame. */
  destroy(): void;
  readonly socket: Duplex;
}

/**
 * Answer the handshake with `101 Switching Protocols` and `protocol`, then call `onMessage` for each complete
 * binary message (channel byte split off) and `onEnd` once when the peer closes or the socket ends.
 */
export function acceptWebSocket(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  protocol: string,
  handlers: { onMessage(channel: number, data: Buffer): void; onEnd(reason: string): void },
): WsConnection {
  const accept = createHash('sha1').update(`${String(req.headers['sec-websocket-key'])}${GUID}`).digest('base64');
  socket.write(
    'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      `Sec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: ${protocol}\r\n\r\n`,
  );
  let ended = false;
  let closing = false;
  const end = (reason: string): void => {
    if (ended) return;
    ended = true;
    handlers.onEnd(reason);
  };
  const frame = (opcode: number, payload: Buffer): boolean => {
    if (socket.destroyed || !socket.writable) return false;
    const len = payload.length;
    const header = len < 126 ? Buffer.from([0x80 | opcode, len]) : len < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
    if (len >= 126 && len < 65536) {
      header[0] = 0x80 | opcode;
      header[1] = 126;
      header.writeUInt16BE(len, 2);
    } else if (len >= 65536) {
      header[0] = 0x80 | opcode;
      header[1] = 127;
      header.writeBigUInt64BE(BigInt(len), 2);
    }
    return socket.write(Buffer.concat([header, payload]));
  };

  let buf: Buffer = head.length ? Buffer.from(head) : Buffer.alloc(0);
  let fragments: Buffer[] = [];
  let fragmentOpcode = 0;
  const parse = (): void => {
    for (;;) {
      if (buf.length < 2) return;
      const fin = (buf[0] & 0x80) !== 0;
      const opcode = buf[0] & 0x0f;
      const masked = (buf[1] & 0x80) !== 0;
      let len = buf[1] & 0x7f;
      let off = 2;
      if (len === 126) {
        if (buf.length < 4) return;
        len = buf.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (buf.length < 10) return;
        len = Number(buf.readBigUInt64BE(2));
        off = 10;
      }
      const maskOff = off;
      if (masked) off += 4;
      if (buf.length < off + len) return;
      const payload = Buffer.from(buf.subarray(off, off + len));
      if (masked) for (let i = 0; i < payload.length; i++) payload[i] ^= buf[maskOff + (i & 3)];
      buf = buf.subarray(off + len);
      if (opcode === 0x8) {
        // Close: answer it (RFC 6455 §5.5.1) and end.
        if (!closing) {
          closing = true;
          frame(0x8, payload.subarray(0, 2));
        }
        socket.end();
        end('peer closed');
        return;
      }
      if (opcode === 0x9) {
        frame(0xa, payload);
        continue;
      }
      if (opcode === 0xa) continue;
      if (opcode !== 0) {
        fragmentOpcode = opcode;
        fragments = [];
      }
      fragments.push(payload);
      if (!fin) continue;
      const message = Buffer.concat(fragments);
      fragments = [];
      if (fragmentOpcode === 0x2 && message.length > 0) handlers.onMessage(message[0], message.subarray(1));
    }
  };
  socket.on('data', (d: Buffer) => {
    buf = buf.length ? Buffer.concat([buf, d]) : d;
    parse();
  });
  socket.on('close', () => end('socket closed'));
  socket.on('error', () => end('socket error'));
  parse();

  return {
    socket,
    send: (channel, data = Buffer.alloc(0)) => frame(0x2, Buffer.concat([Buffer.from([channel]), data])),
    close: () => {
      if (!closing) {
        closing = true;
        const code = Buffer.alloc(2);
        code.writeUInt16BE(1000);
        frame(0x8, code);
      }
      socket.end();
    },
    destroy: () => socket.destroy(),
  };
}
