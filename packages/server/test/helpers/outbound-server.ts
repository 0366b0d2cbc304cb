/**
 * The HTTP server the outbound port's conformance checks talk to (outbound-checks.ts): node:http
 * on a loopback address, driven by the request path alone, so that checks running inside workerd
 * need nothing but its URL. `POST /<behaviour>/<id>` answers as the behaviour says; `GET
 * /_stats/<id>` answers what the server saw of the requests with that id (hits, whether their
 * connection closed, body bytes written). Behaviours:
 *
 * - `echo`: 200 with `{method, headers, body}` of the request as JSON;
 * - `redirect`: 302 to `/echo/<id>-target` (whose hits show whether it was followed);
 * - `endless`: 200 and a body of `x` that never ends, written as fast as the reader takes it;
 * - `trickle`: 200 and one byte of body every 20 ms, forever;
 * - `hang`: never answers;
 * - `reset`: destroys the connection once the request arrived, without a byte of answer;
 * - `cut`: announces 1000 body bytes, sends 10 and destroys the connection.
 *
 * `refusedUrl` names a loopback port nothing listens on (a connection there is refused).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OutboundStats {
  hits: number;
  /** Every connection that carried one of these requests has closed. */
  closed: boolean;
  bytesOut: number;
}

const CHUNK = 'x'.repeat(16 * 1024);

export class OutboundTestServer {
  private readonly stats = new Map<string, OutboundStats>();
  private readonly open = new Set<ServerResponse>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
    readonly refusedUrl: string,
  ) {}

  static async start(): Promise<OutboundTestServer> {
    const refusedPort = await freePort();
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const self = new OutboundTestServer(server, `http://127.0.0.1:${port}`, `http://127.0.0.1:${refusedPort}/echo/refused`);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => self.handle(req, res));
    return self;
  }

  async stop(): Promise<void> {
    for (const res of this.open) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private record(id: string): OutboundStats {
    let stats = this.stats.get(id);
    if (!stats) {
      stats = { hits: 0, closed: false, bytesOut: 0 };
      this.stats.set(id, stats);
    }
    return stats;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const [, behaviour = '', id = ''] = (req.url ?? '').split('/');
    if (req.method === 'GET' && behaviour === '_stats') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(this.record(id)));
      return;
    }
    const stats = this.record(id);
    stats.hits++;
    stats.closed = false;
    this.open.add(res);
    res.once('close', () => {
      this.open.delete(res);
      stats.closed = true;
    });
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => this.answer(behaviour, id, stats, req, Buffer.concat(chunks).toString('utf8'), res));
  }

  private answer(behaviour: string, id: string, stats: OutboundStats, req: IncomingMessage, body: string, res: ServerResponse): void {
    const write = (text: string) => {
      stats.bytesOut += text.length;
      return res.write(text);
    };
    switch (behaviour) {
      case 'echo':
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ method: req.method, headers: req.headers, body }));
        return;
      case 'redirect':
        res.writeHead(302, { location: `/echo/${id}-target` }).end();
        return;
      case 'endless': {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const pump = () => {
          while (!res.destroyed && write(CHUNK));
          if (!res.destroyed) res.once('drain', pump);
        };
        pump();
        return;
      }
      case 'trickle': {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => {
          if (res.destroyed) clearInterval(timer);
          else write('x');
        }, 20);
        res.once('close', () => clearInterval(timer));
        return;
      }
      case 'hang':
        return;
      case 'reset':
        req.socket.destroy();
        return;
      case 'cut':
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' });
        write('x'.repeat(10));
        setTimeout(() => req.socket.destroy(), 20);
        return;
      default:
        res.writeHead(404).end(`no behaviour ${behaviour}`);
    }
  }
}

/** A loopback port that was free a moment ago (listened on, then closed). */
function freePort(): Promise<number> {
  const probe = createServer();
  return new Promise((resolve) => {
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
