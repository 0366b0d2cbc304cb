/**
 * Live connections and waitForEvent over RPC (protocol §19): `stream.openConnection(
 * {...options, processEventBatch})` keeps the caller's callback — a capnweb function stub, which
 * this module duplicates to hold it past the call and disposes when the connection closes — and
 * answers a handle `{connectionKey, streamMaxOffset, close(), whenClosed()}`. Ending the RPC
 * session closes the session's connections (reason `session-ended`) and cancels its waits.
 */
import {
  OpenConnectionOptionsSchema,
  RivuletError,
  WaitForEventBodySchema,
  parseOrThrow,
  type ConnectionBatch,
  type ConnectionClosed,
  type WaitForEventResponse,
} from '@rivulet/contract';
import { RpcTarget } from 'capnweb';
import type { ConnectionHandle } from '../engine/connections/index.js';
import type { StreamService } from '../engine/service.js';
import type { SessionClosers } from './session-closers.js';

/** What a function passed by reference looks like on this side (a capnweb stub). */
interface CallbackStub {
  (batch: ConnectionBatch): Promise<unknown>;
  dup(): CallbackStub;
  [Symbol.dispose](): void;
}

function isCallbackStub(value: unknown): value is CallbackStub {
  return (
    typeof value === 'function' &&
    typeof (value as { dup?: unknown }).dup === 'function' &&
    typeof (value as unknown as Record<symbol, unknown>)[Symbol.dispose] === 'function'
  );
}

export interface RpcConnectionContext {
  service: StreamService;
  projectId: string | null;
  /** Null for the root deliveries evaluate against: they cannot hold a connection. */
  sessionId: string | null;
  sessions: SessionClosers | undefined;
  path: string;
}

/** The handle answered by `openConnection` (only prototype members are reachable over RPC). */
export class LiveConnectionHandle extends RpcTarget {
  readonly #handle: ConnectionHandle;

  constructor(handle: ConnectionHandle) {
    super();
    this.#handle = handle;
  }

  get connectionKey(): string {
    return this.#handle.connectionKey;
  }

  /** The stream head once the connection was open (the offset of its connection-opened fact). */
  get streamMaxOffset(): number {
    return this.#handle.streamMaxOffset;
  }

  /** Closes the connection (reason `requested`); `closed` is false when it had already closed. */
  async close(): Promise<{ closed: boolean }> {
    return { closed: await this.#handle.close('requested') };
  }

  /** Resolves when the connection closes, for whatever reason (`{reason, error?}`). */
  whenClosed(): Promise<ConnectionClosed> {
    return this.#handle.closed;
  }
}

export async function openRpcConnection(ctx: RpcConnectionContext, options: unknown): Promise<LiveConnectionHandle> {
  const { service, sessionId, sessions } = ctx;
  if (sessionId === null) {
    throw new RivuletError('FORBIDDEN', 'live connections are opened by RPC sessions, not by delivery expressions');
  }
  if (!service.openConnection || !sessions) throw new RivuletError('UNAVAILABLE', 'this server does not serve live connections');
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new RivuletError('INVALID_INPUT', 'openConnection takes an options object with a processEventBatch function');
  }
  const { processEventBatch, ...rest } = options as Record<string, unknown>;
  if (!isCallbackStub(processEventBatch)) {
    throw new RivuletError('INVALID_INPUT', 'options.processEventBatch must be a function (passed by reference)');
  }
  const parsed = parseOrThrow(OpenConnectionOptionsSchema, rest, 'options');
  // The stub passed in is disposed when this call returns: keep a duplicate for the connection.
  const callback = processEventBatch.dup();
  // Listen for the session's end before opening: it can end while the opening fact is made
  // durable, after the connection is already listed, and must still close it.
  let handle: ConnectionHandle | undefined;
  let sessionEnded = false;
  const forget = sessions.onClose(sessionId, () => {
    sessionEnded = true;
    if (handle) void handle.close('session-ended');
  });
  try {
    handle = await service.openConnection(ctx.projectId, ctx.path, parsed, (batch) => callback(batch));
  } catch (error) {
    forget();
    callback[Symbol.dispose]();
    throw error;
  }
  if (sessionEnded) void handle.close('session-ended');
  void handle.closed.then(() => {
    forget();
    try {
      callback[Symbol.dispose]();
    } catch {
      // The session is already gone.
    }
  });
  return new LiveConnectionHandle(handle);
}

export async function rpcWaitForEvent(ctx: RpcConnectionContext, body: unknown): Promise<WaitForEventResponse> {
  const { service, sessionId, sessions } = ctx;
  if (!service.waitForEvent) throw new RivuletError('UNAVAILABLE', 'this server does not serve waitForEvent');
  const parsed = parseOrThrow(WaitForEventBodySchema, body, 'body');
  const cancel = new AbortController();
  const forget = sessionId !== null && sessions ? sessions.onClose(sessionId, () => cancel.abort()) : () => undefined;
  try {
    return await service.waitForEvent(ctx.projectId, ctx.path, parsed, cancel.signal);
  } finally {
    forget();
  }
}
