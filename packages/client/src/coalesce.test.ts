/**
 * coalesceWrites on a real `ws` client socket over loopback: what one turn sends reaches the
 * socket in one write, in order; sends in later turns are written in their own turn.
 */
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { coalesceWrites } from './coalesce.js';

let server: WebSocketServer | undefined;
let client: WebSocket | undefined;

afterEach(async () => {
  client?.terminate();
  if (server) await new Promise((resolve) => server!.close(resolve));
  server = client = undefined;
});

async function pair(): Promise<{ socket: WebSocket; received: string[]; writes: () => number }> {
  const received: string[] = [];
  server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await once(server, 'listening');
  server.on('connection', (peer) => peer.on('message', (data: Buffer) => received.push(data.toString())));
  const { port } = server.address() as { port: number };
  client = new WebSocket(`ws://127.0.0.1:${port}`);
  await once(client, 'open');
  const tcp = (client as unknown as { _socket: Socket })._socket;
  let writes = 0;
  const write = tcp._write.bind(tcp);
  const writev = tcp._writev?.bind(tcp);
  tcp._write = (...args) => {
    writes++;
    write(...args);
  };
  if (writev) {
    tcp._writev = (...args) => {
      writes++;
      writev(...args);
    };
  }
  return { socket: client, received, writes: () => writes };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(check()).toBe(true);
}

it('what one turn sends leaves in one write, in order', async () => {
  const { socket, received, writes } = await pair();
  coalesceWrites(socket as unknown as globalThis.WebSocket);
  for (let i = 0; i < 100; i++) socket.send(`reply ${i}`);
  expect(writes()).toBe(0);
  await until(() => received.length === 100);
  expect(writes()).toBe(1);
  expect(received).toEqual(Array.from({ length: 100 }, (_, i) => `reply ${i}`));

  // A later turn writes on its own.
  socket.send('later');
  await until(() => received.length === 101);
  expect(writes()).toBe(2);
});

it('without coalescing, every message is its own write (what the test above guards against)', async () => {
  const { socket, received, writes } = await pair();
  for (let i = 0; i < 10; i++) socket.send(`reply ${i}`);
  await until(() => received.length === 10);
  expect(writes()).toBe(10);
});
