/**
 * Fixed (SDK connect, packages/client/src/rpc.ts openSocket): on Node 20 without a global
 * WebSocket, the first connect() loads `ws` and sends the token in the Authorization header — and
 * then installs `ws` as the global WebSocket (`globalThis.WebSocket ??= ws.WebSocket`). Every
 * later connect() and every reconnect in that process finds the global, takes the browser path
 * (`nodeWs = false`) and puts the token into the URL (`?token=…`), where proxies and access logs
 * record it. Expected: the token travels as a header whenever headers are possible.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket as WsSocket } from 'ws';
import { connect } from './rpc.js';

let server: Server | undefined;
const saved = (globalThis as { WebSocket?: unknown }).WebSocket;

afterEach(async () => {
  (globalThis as { WebSocket?: unknown }).WebSocket = saved;
  if (saved === undefined) delete (globalThis as { WebSocket?: unknown }).WebSocket;
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function recordingServer(): Promise<{ url: string; seen: IncomingMessage[] }> {
  const seen: IncomingMessage[] = [];
  server = createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    seen.push(req);
    const body = JSON.stringify({ error: { code: 'UNAUTHENTICATED', message: 'unknown token' } });
    socket.end(`HTTP/1.1 401 UNAUTHENTICATED\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, seen };
}

it('a second connect() in the same Node process still sends the token as a header, never in the URL', async () => {
  delete (globalThis as { WebSocket?: unknown }).WebSocket;
  const { url, seen } = await recordingServer();
  for (let i = 0; i < 2; i++) {
    await connect(url, { token: 'header-token-000001', reconnect: false }).catch(() => undefined);
  }
  expect(seen).toHaveLength(2);
  expect(seen.map((req) => req.url)).toEqual(['/v1/rpc', '/v1/rpc']); // before the fix: ['/v1/rpc', '/v1/rpc?token=header-token-000001']
  expect(seen.map((req) => req.headers.authorization)).toEqual(['Bearer header-token-000001', 'Bearer header-token-000001']);
});

/*
 * Fixed (SDK connect, packages/client/src/rpc.ts `reconnect`): close() while a reconnection attempt
 * is opening its socket does not stop it. After `socket = await openSocket(url, options)` the loop
 * does not look at `closed` again: it installs the new session, announces it to onSession
 * listeners (serveWorker registers the worker again) and keeps the socket open, although the user
 * closed the connection. Expected: a connection closed during a reconnect stays closed.
 */
it('close() during a reconnection attempt: the late socket is closed and no session is announced', async () => {
  delete (globalThis as { WebSocket?: unknown }).WebSocket;
  const wss = new WebSocketServer({ noServer: true });
  const serverSockets: WsSocket[] = [];
  let heldUpgrade: { req: IncomingMessage; socket: Duplex; head: Buffer } | undefined;
  let upgrades = 0;
  server = createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    upgrades++;
    if (upgrades === 1) wss.handleUpgrade(req, socket, head, (ws) => serverSockets.push(ws));
    else if (!heldUpgrade) heldUpgrade = { req, socket, head };
    else socket.destroy();
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;

  const itx = await connect(url, { reconnect: { initialDelayMs: 5, maxDelayMs: 5 } });
  let sessions = 0;
  itx.onSession(() => void sessions++);
  expect(sessions).toBe(1);
  await waitUntil(() => serverSockets.length === 1, 'the first session');
  // The server drops the session; the client reconnects, and its upgrade is held open.
  serverSockets[0]!.terminate();
  await waitUntil(() => heldUpgrade !== undefined, 'the reconnection attempt');
  itx.close();
  expect(itx.closed).toBe(true);

  // Let the held upgrade complete now: the connection was closed meanwhile.
  const { req, socket, head } = heldUpgrade!;
  const late = await new Promise<WsSocket>((resolve) => wss.handleUpgrade(req, socket, head, resolve));
  let closedByClient = false;
  late.once('close', () => (closedByClient = true));
  try {
    await waitUntil(() => sessions > 1 || closedByClient, 'the client to close the late socket (or to announce it)');
    expect(sessions).toBe(1); // before the fix: 2 — the closed connection announced a new session
    await waitUntil(() => closedByClient, 'the client to close the late socket');
  } finally {
    late.terminate();
    wss.close();
    server!.closeAllConnections();
  }
});

async function waitUntil(probe: () => boolean | Promise<boolean>, what: string, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
