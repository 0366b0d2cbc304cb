/**
 * Fewer socket writes for the SDK's RPC sessions on Node (rpc.ts applies it to `ws` sockets).
 */

/** The part of a `ws` socket's underlying TCP socket that coalescing needs. */
interface Corkable {
  cork(): void;
  uncork(): void;
  destroyed: boolean;
}

/**
 * On Node (`ws`), the messages one turn sends leave in one socket write: Cap'n Web sends every RPC
 * message (each call, its answer, each release) with its own `send()`, and `ws` writes each frame
 * at once, so a process answering a hundred live callbacks of one commit would make hundreds of
 * small writes. The socket stays corked until the end of the turn (process.nextTick runs after the
 * turn's microtasks), then one write sends them all. Browsers' WebSockets have no such handle.
 */
export function coalesceWrites(socket: WebSocket): void {
  const tcp = (socket as unknown as { _socket?: Partial<Corkable> })._socket;
  const nextTick = (globalThis as { process?: { nextTick?(fn: () => void): void } }).process?.nextTick;
  if (!tcp || typeof tcp.cork !== 'function' || typeof tcp.uncork !== 'function' || !nextTick) return;
  const corkable = tcp as Corkable;
  const send = socket.send.bind(socket);
  let corked = false;
  socket.send = (data) => {
    if (!corked && !corkable.destroyed) {
      corked = true;
      corkable.cork();
      nextTick(() => {
        corked = false;
        corkable.uncork();
      });
    }
    send(data);
  };
}
