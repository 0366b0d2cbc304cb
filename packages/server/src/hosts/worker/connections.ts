/**
 * Live connections and waitForEvent across Durable Objects (protocol §19; docs/cloudflare.md §1.4).
 * The engine's ConnectionHub runs in the stream's own object, beside its actor, exactly as in the
 * Node host; the RPC session that opened a connection — and the client's callback — live in the
 * project's hub. The hub passes the stream object an opener by reference whose
 * `processEventBatch` forwards each batch to the client's capnweb stub; its promise settling is
 * the batch's delivery, so the engine's one-batch-at-a-time loop and its backlog bound work
 * unchanged (a slow client delays only its own connection). The stream object answers a `ConnectionControl` by reference, which the
 * hub's handle drives (`close`, `whenClosed`). Each side keeps a call pending on the other
 * (`whenClosed`, `untilClosed`), which fails when the other's object goes away.
 *
 * Ends: the hub closes a connection when its RPC session ends (rpc/connections.ts, as on Node);
 * a hub that went away leaves its connections `session-ended` (its sessions went with it); a stream
 * object that went away while the hub waited (an eviction or a crash) reads as `server-stopped`
 * on the hub's side, without a fact — like a Node server that crashed.
 */
import { RpcTarget } from 'cloudflare:workers';
import type { ConnectionBatch, ConnectionClosed, ConnectionCloseReason } from '@rivulet/contract';
import type { ConnectionHandle } from '../../engine/connections/index.js';
import type { ConnectionControlApi, ConnectionOpenerApi, OpenedConnection, RemoteStub } from './api.js';

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

  /** The hub released it while the connection was open: nobody can drive or close it any more. */
  [Symbol.dispose](): void {
    if (!this.#handle.isClosed) void this.#handle.close('session-ended', 'the RPC hub that opened it went away');
  }
}

/**
 * In the stream object: the engine's callback over the hub's opener. The stub received as an
 * argument is released when the opening call returns, so the connection keeps a duplicate,
 * released when it closes. The opener's pending `untilClosed()` fails when the hub went away: the
 * connection then closes as `session-ended`, since its session went with the hub.
 */
export function holdOpener(opener: RemoteStub<ConnectionOpenerApi>): {
  callback: (batch: ConnectionBatch) => Promise<void>;
  watch(handle: ConnectionHandle): void;
  release(): void;
} {
  const held = opener.dup();
  const releaseHeld = () => release(held);
  return {
    callback: (batch) => held.processEventBatch(batch),
    watch(handle) {
      held.untilClosed().then(
        () => undefined,
        (error: unknown) => {
          if (!handle.isClosed) void handle.close('session-ended', `the RPC hub that opened it went away: ${messageOf(error)}`);
        },
      );
      void handle.closed.then(releaseHeld);
    },
    release: releaseHeld,
  };
}

/** In the hub: what the stream object running a connection holds of its opener. */
class ConnectionOpener extends RpcTarget implements ConnectionOpenerApi {
  readonly #forward: (batch: ConnectionBatch) => Promise<void>;
  readonly #closed: Promise<void>;

  constructor(forward: (batch: ConnectionBatch) => Promise<void>, closed: Promise<void>) {
    super();
    this.#forward = forward;
    this.#closed = closed;
  }

  processEventBatch(batch: ConnectionBatch): Promise<void> {
    return this.#forward(batch);
  }

  untilClosed(): Promise<void> {
    return this.#closed;
  }
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
  open: (opener: ConnectionOpenerApi) => Promise<OpenedConnection>,
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
  let ended!: () => void;
  const closed = new Promise<void>((resolve) => {
    ended = resolve;
  });
  try {
    opened.handle = remoteConnectionHandle(await open(new ConnectionOpener(forward, closed)));
  } catch (error) {
    ended();
    throw error;
  }
  void opened.handle.closed.then(ended);
  return opened.handle;
}
