/**
 * Fewer, larger socket writes for a `ws` WebSocket (the Node host's RPC sessions).
 *
 * Cap'n Web sends every RPC message with its own `ws.send()`, and `ws` writes each frame at once as
 * two chunks (header and payload): a commit that calls a hundred live callbacks (protocol §19) would
 * make several hundred small writes, and even corked into one writev the kernel pays per chunk.
 * From the first send of a turn until the end of the turn (process.nextTick runs after the turn's
 * microtasks) the socket's writes are held and written as one buffer, in order, each write's
 * callback called once that buffer is written. A turn that holds more than `flushBytes` writes what
 * it holds at once and goes on holding: the other side starts reading the first messages while this
 * side still builds the rest, which keeps the latency of a large fan-out down.
 */
import type { Duplex } from 'node:stream';

type Callback = (error?: Error | null) => void;

/** The parts of a `ws` WebSocket this needs. */
export interface SendsFrames {
  send(...args: never[]): void;
}

/**
 * Measured in bench/live (100 connections, quiet machine, same-run A/B of 4, 8, 16 and 64 KiB):
 * 4 KiB gave the lowest and steadiest callback p99 at the same CPU.
 */
export const DEFAULT_FLUSH_BYTES = 4 * 1024;

export function coalesceWrites(ws: SendsFrames, socket: Duplex, flushBytes = DEFAULT_FLUSH_BYTES): void {
  const send = ws.send.bind(ws) as (...args: unknown[]) => void;
  const write = socket.write.bind(socket) as (chunk: Buffer, callback?: Callback) => boolean;
  /** A turn that sent is under way: writes are held until its end. */
  let holding = false;
  let chunks: Buffer[] = [];
  let callbacks: Callback[] = [];
  let bytes = 0;

  const flush = () => {
    if (chunks.length === 0) return;
    const data = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes);
    const done = callbacks;
    chunks = [];
    callbacks = [];
    bytes = 0;
    if (socket.destroyed || socket.writableEnded) {
      // What a write to a closed socket does: each callback learns that its data did not go.
      const error = new Error('the WebSocket closed before the message was written');
      for (const callback of done) callback(error);
      return;
    }
    write(data, done.length === 0 ? undefined : (error) => done.forEach((callback) => callback(error)));
  };

  socket.write = ((chunk: Buffer | string, encoding?: BufferEncoding | Callback, callback?: Callback) => {
    const done = typeof encoding === 'function' ? encoding : callback;
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? encoding : 'utf8') : chunk;
    if (!holding) return write(buffer, done);
    chunks.push(buffer);
    bytes += buffer.length;
    if (done) callbacks.push(done);
    if (bytes >= flushBytes) flush();
    return true;
  }) as typeof socket.write;

  ws.send = ((...args: unknown[]) => {
    if (!holding && !socket.destroyed) {
      holding = true;
      process.nextTick(() => {
        holding = false;
        flush();
      });
    }
    send(...args);
  }) as typeof ws.send;
}
