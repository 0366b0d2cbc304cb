/**
 * coalesceWrites over a real loopback TCP socket: what one turn sends arrives as one write, in
 * order, with every callback called; a turn past the threshold writes early; a closed socket
 * fails the held callbacks instead of dropping them.
 */
import { once } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { coalesceWrites } from './coalesce-writes.js';

/** A stand-in for `ws`: each send writes a header chunk and a payload chunk, as `ws` does. */
class FrameSender {
  constructor(private readonly socket: Socket) {}
  send(text: string, callback?: (error?: Error | null) => void): void {
    this.socket.write(Buffer.from(`<${text.length}>`));
    this.socket.write(text, 'utf8', callback);
  }
}

let server: Server | undefined;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  if (server) await new Promise((resolve) => server!.close(resolve));
  server = undefined;
});

/** A connected pair; `received` collects what the far side read. */
async function pair(): Promise<{ socket: Socket; received: string[]; writes: () => number }> {
  const received: string[] = [];
  server = createServer((peer) => {
    sockets.push(peer);
    peer.on('data', (chunk: Buffer) => received.push(chunk.toString()));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  await once(socket, 'connect');
  let writes = 0;
  const write = socket._write.bind(socket);
  const writev = socket._writev?.bind(socket);
  socket._write = (...args) => {
    writes++;
    write(...args);
  };
  if (writev) {
    socket._writev = (...args) => {
      writes++;
      writev(...args);
    };
  }
  return { socket, received, writes: () => writes };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(check()).toBe(true);
}

describe('coalesceWrites', () => {
  it('what one turn sends leaves in one write, in order, and every callback is called', async () => {
    const { socket, received, writes } = await pair();
    const ws = new FrameSender(socket);
    coalesceWrites(ws, socket);
    const called: number[] = [];
    for (let i = 0; i < 50; i++) ws.send(`m${i}`, () => called.push(i));
    expect(writes()).toBe(0);
    await until(() => called.length === 50);
    expect(writes()).toBe(1);
    expect(called).toEqual(Array.from({ length: 50 }, (_, i) => i));
    const expected = Array.from({ length: 50 }, (_, i) => `<${`m${i}`.length}>m${i}`).join('');
    await until(() => received.join('').length === expected.length);
    expect(received.join('')).toBe(expected);
  });

  it('a turn past the threshold writes what it holds at once, and the rest at its end', async () => {
    const { socket, received, writes } = await pair();
    const ws = new FrameSender(socket);
    coalesceWrites(ws, socket, 100);
    const message = 'x'.repeat(40);
    ws.send(message);
    expect(writes()).toBe(0);
    ws.send(message); // 2 × (4 + 40) bytes = 88: still held
    expect(writes()).toBe(0);
    ws.send(message); // 132 ≥ 100: written now
    expect(writes()).toBe(1);
    ws.send('tail');
    expect(writes()).toBe(1);
    await until(() => writes() === 2);
    await until(() => received.join('').endsWith('<4>tail'));
    expect(received.join('')).toBe(`<40>${message}`.repeat(3) + '<4>tail');
  });

  it('writes outside a turn that sent go straight through', async () => {
    const { socket, received, writes } = await pair();
    coalesceWrites(new FrameSender(socket), socket);
    socket.write('pong');
    expect(writes()).toBe(1);
    await until(() => received.join('') === 'pong');
  });

  it('a socket closed before the turn ends fails the held callbacks', async () => {
    const { socket } = await pair();
    const ws = new FrameSender(socket);
    coalesceWrites(ws, socket);
    const errors: (Error | null | undefined)[] = [];
    ws.send('lost', (error) => errors.push(error));
    socket.destroy();
    await until(() => errors.length === 1);
    expect(errors[0]).toBeInstanceOf(Error);
    expect(errors[0]!.message).toBe('the WebSocket closed before the message was written');
  });
});
