/**
 * connect(): how the RPC URL is built and how the token travels. A fake WebSocket class records the
 * URL a browser-style socket would open (no headers possible: token and project go in the query);
 * a bare node:http server records the upgrade request the `ws` package sends when there is no
 * global WebSocket (Node 20): the token goes in the Authorization header, never in the URL.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { RivuletError } from '@rivulet/contract';
import { connect, type ConnectOptions } from './rpc.js';

async function rejection(promise: Promise<unknown>): Promise<RivuletError> {
  try {
    await promise;
  } catch (error) {
    return error as RivuletError;
  }
  throw new Error('expected a rejection');
}

/** A browser-like WebSocket that records its URL and arguments, then fails to connect. */
function failingSocketClass() {
  const opened: { url: string; args: number }[] = [];
  class FakeSocket extends EventTarget {
    constructor(url: string, ...rest: unknown[]) {
      super();
      opened.push({ url, args: rest.length });
      setTimeout(() => this.dispatchEvent(new Event('error')), 0);
    }
  }
  return { opened, WebSocket: FakeSocket as unknown as NonNullable<ConnectOptions['WebSocket']> };
}

describe('connect: the RPC URL', () => {
  it('maps http to ws and https to wss, keeps a path prefix, and addresses /v1/rpc', async () => {
    const { opened, WebSocket } = failingSocketClass();
    for (const base of ['http://127.0.0.1:7420', 'http://127.0.0.1:7420/', 'https://example.com/rivulet/', 'ws://h:1/a/b', 'wss://h']) {
      await rejection(connect(base, { WebSocket, reconnect: false }));
    }
    expect(opened.map((o) => o.url)).toEqual([
      'ws://127.0.0.1:7420/v1/rpc',
      'ws://127.0.0.1:7420/v1/rpc',
      'wss://example.com/rivulet/v1/rpc',
      'ws://h:1/a/b/v1/rpc',
      'wss://h/v1/rpc',
    ]);
    // A browser WebSocket takes no options object.
    expect(opened.every((o) => o.args === 0)).toBe(true);
  });

  it('sends the token and project as ?token= and ?project= when headers are impossible (a browser-style WebSocket class)', async () => {
    const { opened, WebSocket } = failingSocketClass();
    await rejection(connect('https://example.com/base', { WebSocket, token: 'tok en/+&', projectId: 'proj-a', reconnect: false }));
    const url = new URL(opened[0]!.url);
    expect(url.origin + url.pathname).toBe('wss://example.com/base/v1/rpc');
    expect(url.searchParams.get('token')).toBe('tok en/+&');
    expect(url.searchParams.get('project')).toBe('proj-a');
    // Without a token or project, no query at all.
    await rejection(connect('https://example.com/base', { WebSocket, reconnect: false }));
    expect(opened[1]!.url).toBe('wss://example.com/base/v1/rpc');
  });

  it('a socket that cannot open rejects with UNAVAILABLE naming the URL, without the token', async () => {
    const { WebSocket } = failingSocketClass();
    const error = await rejection(connect('http://127.0.0.1:9', { WebSocket, token: 'very-secret-token-1', reconnect: false }));
    expect(error).toBeInstanceOf(RivuletError);
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.message).toContain('ws://127.0.0.1:9/v1/rpc');
    expect(error.message).not.toContain('very-secret-token-1');
  });

  it('refuses a URL that is not a URL or not http(s)/ws(s), before opening anything (INVALID_INPUT)', async () => {
    const { opened, WebSocket } = failingSocketClass();
    for (const base of ['not a url', 'ftp://example.com', 'file:///tmp/x']) {
      const error = await rejection(connect(base, { WebSocket, reconnect: false }));
      expect(error.code, base).toBe('INVALID_INPUT');
    }
    expect(opened).toEqual([]);
  });
});

describe('connect on Node without a global WebSocket (the `ws` package)', () => {
  let server: Server | undefined;
  const saved = (globalThis as { WebSocket?: unknown }).WebSocket;

  afterEach(async () => {
    (globalThis as { WebSocket?: unknown }).WebSocket = saved;
    if (saved === undefined) delete (globalThis as { WebSocket?: unknown }).WebSocket;
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
  });

  /** A server that records each upgrade request and refuses it with a JSON 401 (the server's shape). */
  async function recordingServer(): Promise<{ url: string; seen: IncomingMessage[] }> {
    const seen: IncomingMessage[] = [];
    server = createServer((_req, res) => res.writeHead(404).end());
    server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
      seen.push(req);
      const body = JSON.stringify({ error: { code: 'UNAUTHENTICATED', message: 'unknown token' } });
      socket.end(
        `HTTP/1.1 401 UNAUTHENTICATED\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, seen };
  }

  it('sends the token in the Authorization header and the project in X-Project-Id, not in the URL; a refused upgrade rejects with the server\'s error code', async () => {
    delete (globalThis as { WebSocket?: unknown }).WebSocket;
    const { url, seen } = await recordingServer();
    const error = await rejection(connect(url, { token: 'header-token-000001', projectId: 'proj-a', reconnect: false }));
    expect(error).toBeInstanceOf(RivuletError);
    expect(error.code).toBe('UNAUTHENTICATED');
    expect(error.message).toBe('unknown token');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.url).toBe('/v1/rpc');
    expect(seen[0]!.headers.authorization).toBe('Bearer header-token-000001');
    expect(seen[0]!.headers['x-project-id']).toBe('proj-a');
  });
});
