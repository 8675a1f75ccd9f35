/**
 * The eval's HTTP client (core/eval/spec/server/http.ts) speaks over the channel its `open` gives, and nothing else:
 * the address it is given is the server as the training host sees it, which this machine may not reach at all.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { httpRequest, parseServerUrl } from '../../src/core/eval/spec/server/http';
import { rejectsWith } from '../harness/assertKind';

test('a request goes over the channel open() gives, never a connection of its own to the address (which nothing here listens on)', async () => {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url} host=${req.headers.host}`);
    res.end('{"ok": true}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const real = (server.address() as AddressInfo).port;
  let opened = 0;
  // The address is the host's view: port 1 of 127.0.0.1, where nothing listens on this machine.
  const address = parseServerUrl('http://127.0.0.1:1');
  const open = (): Promise<net.Socket> => {
    opened++;
    return new Promise((resolve, reject) => {
      const s = net.connect(real, '127.0.0.1', () => resolve(s));
      s.once('error', reject);
    });
  };
  try {
    const reply = await httpRequest(open, address, 'GET', '/v1/models');
    assert.deepEqual([reply.status, reply.body, opened], [200, '{"ok": true}', 1]);
    assert.deepEqual(seen, ['GET /v1/models host=127.0.0.1:1']);
    const posted = await httpRequest(open, address, 'POST', '/v1/chat/completions', { model: 'm' });
    assert.equal(posted.status, 200);
    assert.equal(opened, 2, 'one channel per request');
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('cancelled during a request: cancelled, not a protocol error, and the channel is closed', async () => {
  const server = http.createServer(() => undefined); // never answers
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const real = (server.address() as AddressInfo).port;
  let channel: net.Socket | undefined;
  const open = (): Promise<net.Socket> =>
    new Promise((resolve, reject) => {
      const s = net.connect(real, '127.0.0.1', () => resolve((channel = s)));
      s.once('error', reject);
    });
  const ac = new AbortController();
  try {
    const pending = httpRequest(open, parseServerUrl('http://10.0.0.5:30000'), 'GET', '/metrics', undefined, ac.signal);
    while (!channel) await new Promise((r) => setTimeout(r, 5));
    ac.abort();
    await rejectsWith(pending, 'cancelled');
    assert.equal(channel.destroyed, true);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
