/**
 * The RPC endpoint in the Node host: WebSocket upgrades of `/v1/rpc` (the `ws` package), each
 * authenticated like HTTP before the upgrade completes (protocol §18.1: `Authorization: Bearer` or,
 * for browsers that cannot set headers, `?token=`; `X-Project-Id` or `?project=`), then handed to
 * the host-agnostic session of rpc/session.ts. A refused upgrade answers the JSON error shape.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import { RivuletError } from '@rivulet/contract';
import { authenticate, type TokenTable } from '../../http/auth.js';
import { toRivuletError, type ErrorLogger } from '../../http/errors.js';
import type { ItxDeps } from '../../rpc/root.js';
import { startRpcSession, type RpcSessionHooks } from '../../rpc/session.js';
import { coalesceWrites } from '../../net/coalesce-writes.js';

// Cap'n Web reads WebSocket.CONNECTING from the global, which Node 20 does not define.
(globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;

export const RPC_PATH = '/v1/rpc';
const MAX_PAYLOAD = 16 * 1024 * 1024;

function refuse(socket: Duplex, error: RivuletError): void {
  const body = JSON.stringify(error.toBody());
  socket.end(
    `HTTP/1.1 ${error.status} ${error.code}\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

export interface RpcEndpoint {
  /** Open sessions. */
  readonly sessions: number;
  /** Asks every session to close (a close frame, 1001 going away) and accepts no new one. */
  close(): void;
  /** Cuts the sessions that are still open. */
  terminate(): void;
}

export function attachRpc(
  server: Server,
  options: { tokens: TokenTable | null; deps: ItxDeps; logger: ErrorLogger; ready(): boolean; hooks?: RpcSessionHooks },
): RpcEndpoint {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_PAYLOAD });
  const open = new Set<WebSocket>();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://rivulet');
    if (url.pathname !== RPC_PATH) {
      refuse(socket, new RivuletError('NOT_FOUND', `no WebSocket endpoint at ${url.pathname}; RPC is at ${RPC_PATH}`));
      return;
    }
    if (!options.ready()) {
      refuse(socket, new RivuletError('UNAVAILABLE', 'starting or shutting down'));
      return;
    }
    let principal;
    try {
      const token = url.searchParams.get('token');
      const project = url.searchParams.get('project');
      principal = authenticate(
        {
          get(name) {
            const header = req.headers[name];
            if (typeof header === 'string') return header;
            if (name === 'authorization' && token) return `Bearer ${token}`;
            if (name === 'x-project-id' && project) return project;
            return null;
          },
        },
        options.tokens,
      );
    } catch (error) {
      refuse(socket, toRivuletError(error, options.logger));
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      coalesceWrites(ws, socket);
      open.add(ws);
      ws.once('close', () => open.delete(ws));
      startRpcSession(ws, principal, options.deps, options.logger, options.hooks);
    });
  });
  return {
    get sessions() {
      return open.size;
    },
    close() {
      for (const ws of open) ws.close(1001, 'the server is shutting down');
      wss.close();
    },
    terminate() {
      for (const ws of open) ws.terminate();
    },
  };
}
