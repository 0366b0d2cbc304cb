/**
 * `connect(url, {token})`: the ITX root over RPC (Cap'n Web over WebSocket, protocol §18.1, §18.6),
 * kept connected: when the session breaks, the connection reconnects with backoff and announces
 * each new session to `onSession` listeners (serveWorker re-registers there). `root` is always the
 * current session's root.
 *
 * Browsers cannot set headers on a WebSocket, so there the token travels as `?token=`; on Node the
 * `ws` package is loaded on demand (also where a global WebSocket exists) and sends a header.
 */
import { RivuletError } from '@rivulet/contract';
import { newWebSocketRpcSession, type RpcStub } from 'capnweb';
import { coalesceWrites } from './coalesce.js';
import type { ItxRootRpc } from './rpc-types.js';
import { currentToken, type TokenSource } from './token.js';

type WebSocketCtor = new (url: string, options?: unknown) => WebSocket;

export interface ConnectOptions {
  /** A token, or a function asked for the current one at every connect and reconnect (token.ts). */
  token?: TokenSource | undefined;
  projectId?: string | undefined;
  /** A WebSocket class to use instead of `ws` (on Node) or the global one (in browsers). */
  WebSocket?: WebSocketCtor | undefined;
  /** Backoff between reconnection attempts (default 100 ms doubling to 5 s). */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number } | false;
}

export type ItxRoot = RpcStub<ItxRootRpc>;

export interface ItxConnection {
  /** The current session's root. */
  readonly root: ItxRoot;
  /** Calls `listener` with the current session's root now and with every new one after a reconnect. */
  onSession(listener: (root: ItxRoot) => void | Promise<void>): () => void;
  /** Ends the connection for good. */
  close(): void;
  readonly closed: boolean;
}

/** The options of one connect, its token resolved. */
type Resolved = Omit<ConnectOptions, 'token'> & { token?: string | undefined };

function rpcUrl(base: string, options: Resolved, headersPossible: boolean): string {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new RivuletError('INVALID_INPUT', `server URL "${base}" is not a valid URL`);
  }
  if (url.protocol === 'http:') url.protocol = 'ws:';
  else if (url.protocol === 'https:') url.protocol = 'wss:';
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
    throw new RivuletError('INVALID_INPUT', `server URL "${base}" must use http(s) or ws(s)`);
  }
  url.pathname = `${url.pathname.replace(/\/$/, '')}/v1/rpc`;
  if (!headersPossible) {
    if (options.token) url.searchParams.set('token', options.token);
    if (options.projectId) url.searchParams.set('project', options.projectId);
  }
  return url.toString();
}

/** The `ws` class this SDK loaded on Node, remembered so that later sessions keep sending headers. */
let loadedWs: WebSocketCtor | undefined;

/** `ws` (Node) sockets take headers; a browser's WebSocket does not, and is not an EventEmitter. */
function takesHeaders(Ctor: WebSocketCtor): boolean {
  return Ctor === loadedWs || typeof (Ctor.prototype as { on?: unknown }).on === 'function';
}

/**
 * Node (and runtimes that present themselves as Node) get `ws` even when they have a global
 * WebSocket (Node 22 and later): the global one, like a browser's, sends no headers and hides the
 * status of a refused upgrade, so an auth refusal would read as UNAVAILABLE.
 */
const IN_NODE = typeof process !== 'undefined' && typeof process.versions?.node === 'string';

async function openSocket(base: string, connectOptions: ConnectOptions): Promise<WebSocket> {
  const options: Resolved = { ...connectOptions, token: await currentToken(connectOptions.token) };
  let Ctor = options.WebSocket ?? loadedWs ?? (IN_NODE ? undefined : (globalThis as { WebSocket?: WebSocketCtor }).WebSocket);
  if (!Ctor) {
    const ws = (await import('ws')) as unknown as { WebSocket: WebSocketCtor };
    Ctor = loadedWs = ws.WebSocket;
  }
  // Cap'n Web reads WebSocket.CONNECTING from the global, which Node 20 does not define.
  (globalThis as { WebSocket?: unknown }).WebSocket ??= Ctor;
  const nodeWs = takesHeaders(Ctor);
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.projectId) headers['x-project-id'] = options.projectId;
  const socket = nodeWs ? new Ctor(rpcUrl(base, options, true), { headers }) : new Ctor(rpcUrl(base, options, false));
  await new Promise<void>((resolve, reject) => {
    const opened = () => {
      cleanup();
      resolve();
    };
    const failed = (event: unknown) => {
      cleanup();
      const message = (event as { message?: string })?.message ?? 'the WebSocket connection failed';
      reject(new RivuletError('UNAVAILABLE', `cannot open an RPC session at ${rpcUrl(base, options, true)}: ${message}`));
    };
    const unexpected = (_req: unknown, response: { statusCode?: number; on?: (e: string, cb: (c: Buffer) => void) => void }) => {
      // `ws` reports a refused upgrade with the server's answer; read its JSON error.
      // Chunks joined before decoding: a character split between two of them stays whole.
      const chunks: Buffer[] = [];
      response.on?.('data', (chunk) => chunks.push(chunk));
      response.on?.('end', () => {
        cleanup();
        try {
          const e = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error: { code: string; message: string; details?: unknown } }).error;
          reject(new RivuletError(e.code as never, e.message, e.details));
        } catch {
          reject(new RivuletError('UNAVAILABLE', `the RPC upgrade was refused with status ${response.statusCode ?? '?'}`));
        }
      });
    };
    const cleanup = () => {
      socket.removeEventListener('open', opened);
      socket.removeEventListener('error', failed);
      (socket as unknown as { off?: (e: string, cb: unknown) => void }).off?.('unexpected-response', unexpected);
    };
    socket.addEventListener('open', opened);
    socket.addEventListener('error', failed);
    (socket as unknown as { on?: (e: string, cb: unknown) => void }).on?.('unexpected-response', unexpected);
  });
  if (nodeWs) coalesceWrites(socket);
  return socket;
}

export async function connect(url: string, options: ConnectOptions = {}): Promise<ItxConnection> {
  const listeners = new Set<(root: ItxRoot) => void | Promise<void>>();
  let closed = false;
  let socket = await openSocket(url, options);
  let root = newWebSocketRpcSession<ItxRootRpc>(socket);
  const initial = options.reconnect === false ? undefined : (options.reconnect?.initialDelayMs ?? 100);
  const maxDelay = options.reconnect === false ? 0 : (options.reconnect?.maxDelayMs ?? 5000);

  const announce = (r: ItxRoot) => {
    for (const listener of listeners) void Promise.resolve(listener(r)).catch(() => undefined);
  };

  const watch = (r: ItxRoot) => {
    r.onRpcBroken(() => {
      if (closed || r !== root || initial === undefined) return;
      void reconnect();
    });
  };

  const reconnect = async () => {
    let delay = initial!;
    while (!closed) {
      await new Promise((resolve) => setTimeout(resolve, delay));
      if (closed) return;
      try {
        const next = await openSocket(url, options);
        if (closed) {
          next.close();
          return;
        }
        socket = next;
        root = newWebSocketRpcSession<ItxRootRpc>(socket);
        watch(root);
        announce(root);
        return;
      } catch {
        delay = Math.min(maxDelay, delay * 2);
      }
    }
  };

  watch(root);
  return {
    get root() {
      return root;
    },
    get closed() {
      return closed;
    },
    onSession(listener) {
      listeners.add(listener);
      void Promise.resolve(listener(root)).catch(() => undefined);
      return () => listeners.delete(listener);
    },
    close() {
      closed = true;
      try {
        root[Symbol.dispose]();
      } catch {
        // Already broken.
      }
      socket.close();
    },
  };
}
