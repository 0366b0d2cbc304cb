/**
 * A real webhook receiver for tests: node:http on a loopback address and an ephemeral port. It
 * records every request (headers, raw body, parsed envelope) and answers through a script: a
 * status, 'hang' (never answer; ended by stop()), or a custom handler (redirects, endless bodies).
 * stop() closes the port and destroys every connection, so the address then refuses connections
 * (an outage); restart() listens on the same address and port again.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { WebhookEnvelope } from '@rivulet/client';

export interface HookRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The parsed body (undefined when it is not JSON). */
  envelope: WebhookEnvelope;
  at: number;
}

export type HookAnswer =
  | { status: number; body?: string; headers?: Record<string, string> }
  | 'hang'
  | ((res: ServerResponse, req: IncomingMessage) => void);

export type HookScript = (request: HookRequest, index: number) => HookAnswer;

const TLS_DIR = new URL('../fixtures/tls/', import.meta.url);
/** The test certificate (self-signed, so also the CA to trust) and its key (for names hooks.rivulet.test, localhost and 127.0.0.1). */
export const TEST_CA = readFileSync(new URL('cert.pem', TLS_DIR), 'utf8');
export const TEST_KEY = readFileSync(new URL('key.pem', TLS_DIR), 'utf8');

export class HookServer {
  readonly requests: HookRequest[] = [];
  /** TCP connections accepted so far (a refused destination must never add one). */
  connections = 0;
  /** With tls: for each TLS connection, whether it resumed an earlier session. */
  readonly sessionsReused: boolean[] = [];
  script: HookScript = () => ({ status: 204 });
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;

  private constructor(
    readonly host: string,
    public port: number,
    private readonly tls: boolean,
  ) {}

  /** With `tls`, serves https with the test certificate (test/fixtures/tls, TEST_CA trusts it). */
  static async start(options: { host?: string; port?: number; tls?: boolean } = {}): Promise<HookServer> {
    const hooks = new HookServer(options.host ?? '127.0.0.1', options.port ?? 0, options.tls ?? false);
    await hooks.listen();
    return hooks;
  }

  /** The URL of `path` on this receiver (by address, or under another host name). */
  url(path = '/hook', hostName?: string): string {
    const host = hostName ?? (this.host.includes(':') ? `[${this.host}]` : this.host);
    return `${this.tls ? 'https' : 'http'}://${host}:${this.port}${path}`;
  }

  /** Connections open right now. */
  get openConnections(): number {
    return this.sockets.size;
  }

  get running(): boolean {
    return this.server !== undefined;
  }

  envelopes(): WebhookEnvelope[] {
    return this.requests.map((r) => r.envelope);
  }

  /** The event offset of every request, in arrival order (retries repeat an offset). */
  offsets(): number[] {
    return this.requests.map((r) => r.envelope.event.offset);
  }

  private listen(): Promise<void> {
    const server: Server = this.tls
      ? createHttpsServer({ key: TEST_KEY, cert: TEST_CA }, (req, res) => this.handle(req, res))
      : createServer((req, res) => this.handle(req, res));
    if (this.tls) server.on('secureConnection', (socket: TLSSocket) => this.sessionsReused.push(socket.isSessionReused()));
    server.on('connection', (socket: Socket) => {
      this.connections++;
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, this.host, () => {
        server.off('error', reject);
        this.port = (server.address() as AddressInfo).port;
        this.server = server;
        resolve();
      });
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let envelope: unknown;
      try {
        envelope = JSON.parse(body);
      } catch {
        envelope = undefined;
      }
      const request: HookRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        envelope: envelope as WebhookEnvelope,
        at: Date.now(),
      };
      this.requests.push(request);
      const answer = this.script(request, this.requests.length - 1);
      if (answer === 'hang') return;
      if (typeof answer === 'function') {
        answer(res, req);
        return;
      }
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body ?? '');
    });
  }

  /** Closes the port and every connection: the address refuses connections until restart(). */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of this.sockets) socket.destroy();
    });
  }

  /** Listens again on the same address and port. */
  restart(): Promise<void> {
    return this.listen();
  }
}

/** Headers as the standardwebhooks package wants them (single string values). */
export function signatureHeaders(request: HookRequest): Record<string, string> {
  const pick = (name: string) => String(request.headers[name] ?? '');
  return { 'webhook-id': pick('webhook-id'), 'webhook-timestamp': pick('webhook-timestamp'), 'webhook-signature': pick('webhook-signature') };
}
