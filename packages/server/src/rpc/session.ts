/**
 * One RPC session over an open WebSocket (protocol §18.1): Cap'n Web with the caller's ITX root as
 * the main object. The host authenticates the upgrade and hands over the socket; everything the
 * session registered ends with it. Host-agnostic: any WebSocket with addEventListener works (the
 * `ws` package on Node, the Workers WebSocket on Cloudflare).
 */
import { newWebSocketRpcSession } from 'capnweb';
import type { Principal } from '../http/auth.js';
import type { ErrorLogger } from '../http/errors.js';
import { rpcSendError } from './errors.js';
import { ItxRoot, type ItxDeps } from './root.js';

export interface RpcSocket {
  addEventListener(type: 'close', listener: () => void): void;
}

export interface RpcSessionHooks {
  onOpen?(sessionId: string): void;
  onClose?(sessionId: string): void;
}

/** Largest message a peer may send; bigger ones abort the session (capnweb checks before parsing). */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export function startRpcSession(
  socket: RpcSocket,
  principal: Principal,
  deps: ItxDeps,
  logger: ErrorLogger,
  hooks: RpcSessionHooks = {},
): string {
  const sessionId = globalThis.crypto.randomUUID();
  const root = new ItxRoot({ projectId: principal.projectId, sessionId, deps });
  const remote = newWebSocketRpcSession(socket as unknown as WebSocket, root, {
    onSendError: rpcSendError(logger),
    limits: { maxMessageSize: MAX_MESSAGE_BYTES },
  });
  hooks.onOpen?.(sessionId);
  socket.addEventListener('close', () => {
    deps.workers.endSession(sessionId);
    deps.processors?.endSession(sessionId);
    // Before the session is disposed: its connections close as "session-ended", not as failed calls.
    deps.sessions?.end(sessionId);
    try {
      remote[Symbol.dispose]();
    } catch {
      // The session is already gone.
    }
    hooks.onClose?.(sessionId);
  });
  return sessionId;
}
