/**
 * Live connections and waitForEvent across Durable Objects (protocol §19; docs/cloudflare.md §1.4).
 * The engine's ConnectionHub runs in the stream's own object, beside its actor, exactly as in the
 * Node host; the RPC session that opened a connection — and the client's callback — live in the
 * project's hub. The hub passes the stream object a function by reference that forwards each
 * batch to the client's capnweb stub, and its promise settling is the batch's delivery, so the
 * engine's one-batch-at-a-time loop and its backlog bound work unchanged (a slow client delays only
 * its own connection). The stream object answers a `ConnectionControl` by reference, which the
 * hub's handle drives (`close`, `whenClosed`).
 *
 * Ends: the hub closes a connection when its RPC session ends (rpc/connections.ts, as on Node);
 * releasing the control (the hub's isolate went away) closes it as `session-ended`; a stream
 * object that went away while the hub waited (an eviction or a crash) reads as `server-stopped`
 * on the hub's side, without a fact — like a Node server that crashed.
 */
import { RpcTarget } from 'cloudflare:workers';
import type { ConnectionBatch, ConnectionClosed, ConnectionCloseReason } from '@rivulet/contract';
import type { ConnectionHandle } from '../engine/connections/index.js';
import type { ConnectionControlApi, OpenedConnection, RemoteFunction } from './worker-api.js';

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Releases a stub; one whose connection already broke has nothing left to release. */
export function release(stub: { [Symbol.dispose](): void }): void {
  try {
    stub[Symbol.dispose]();
  } catch {
    // Already released or broken.
  }
}

/** In the stream object: one open connection, driven by reference from the hub. */
export class ConnectionControl extends RpcTarget implements ConnectionControlApi {
  readonly #handle: ConnectionHandle;

  constructor(handle: ConnectionHandle) {
    super();
    this.#handle = handle;
  }

  close(reason: ConnectionCloseReason, error?: string): Promise<boolean> {
    return this.#handle.close(reason, error);
  }

  whenClosed(): Promise<ConnectionClosed> {
    return this.#handle.closed;
  }

  [Symbol.dispose](): void {
    if (!this.#handle.isClosed) void this.#handle.close('session-ended', 'the RPC hub that opened it went away');
  }
}

/**
 * In the stream object: the engine's callback over the hub's function. The stub received as an
 * argument is released when the opening call returns, so the connection keeps a duplicate, released
 * when it closes.
 */
export function heldCallback(processEventBatch: RemoteFunction<ConnectionBatch, void>): {
  callback: (batch: ConnectionBatch) => Promise<void>;
  release(): void;
} {
  const held = processEventBatch.dup();
  return { callback: (batch) => held(batch), release: () => release(held) };
}

/** In the hub: the engine's ConnectionHandle over the stream object's control. */
function remoteConnectionHandle(opened: OpenedConnection): ConnectionHandle & { readonly closeRequested: boolean } {
  const { control } = opened;
  let isClosed = false;
  let closeRequested = false;
  let closing: Promise<unknown> = Promise.resolve();
  const closed = control
    .whenClosed()
    .then(
      (outcome) => outcome,
      (error: unknown): ConnectionClosed => ({ reason: 'server-stopped', error: `the stream's object went away: ${messageOf(error)}` }),
    )
    .then((outcome) => {
      isClosed = true;
      // Released once no close() call is still on its way through it.
      void closing.finally(() => release(control));
      return outcome;
    });
  return {
    connectionKey: opened.connectionKey,
    streamMaxOffset: opened.streamMaxOffset,
    closed,
    get isClosed() {
      return isClosed;
    },
    get closeRequested() {
      return closeRequested;
    },
    close(reason = 'requested', error) {
      if (isClosed) return Promise.resolve(false);
      closeRequested = true;
      const call = control.close(reason, error).catch(() => false);
      closing = call;
      return call;
    },
  };
}

/**
 * In the hub: opens a connection in the stream's object with a function forwarding each batch to
 * `callback`, and answers the engine's handle over it. When the RPC session ends, the hub asks the
 * object to close the connection (`session-ended`) while the session's pending calls already fail;
 * a batch that fails after the close was asked for waits for that close instead of failing the
 * connection, so the reason recorded is the one asked for — as on the Node host, where both happen
 * in one turn.
 */
export async function openRemoteConnection(
  open: (forward: (batch: ConnectionBatch) => Promise<void>) => Promise<OpenedConnection>,
  callback: (batch: ConnectionBatch) => unknown,
): Promise<ConnectionHandle> {
  const opened: { handle?: ReturnType<typeof remoteConnectionHandle> } = {};
  // Only the settling crosses back (the callback may answer an RPC promise, which cannot).
  const forward = async (batch: ConnectionBatch): Promise<void> => {
    try {
      await callback(batch);
    } catch (error) {
      if (!opened.handle?.closeRequested) throw error;
      await opened.handle.closed;
    }
  };
  opened.handle = remoteConnectionHandle(await open(forward));
  return opened.handle;
}
