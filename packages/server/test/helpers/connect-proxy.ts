/**
 * A tiny CONNECT proxy for tests of the webhook egress proxy (protocol §17.4): node:http's
 * `connect` event, a TCP connection to the asked target, bytes piped both ways. It records every
 * CONNECT target as asked and can refuse some; anything but CONNECT is answered 405.
 */
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';

export class ConnectProxy {
  /** Every CONNECT target in arrival order (`host:port` as asked). */
  readonly targets: string[] = [];
  /** Requests that were not CONNECT. */
  plain = 0;
  /** Targets answered 403 instead of connected. */
  refuse: (target: string) => boolean = () => false;
  private readonly sockets = new Set<Socket>();

  port = 0;
  private server: Server | undefined;

  private constructor() {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<ConnectProxy> {
    const proxy = new ConnectProxy();
    const server = createServer((_req, res) => {
      proxy.plain++;
      res.writeHead(405).end();
    });
    server.on('connect', (req, client: Socket, head: Buffer) => {
      const target = req.url ?? '';
      proxy.targets.push(target);
      proxy.track(client);
      client.on('error', () => undefined);
      if (proxy.refuse(target)) {
        client.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
        return;
      }
      const at = target.lastIndexOf(':');
      const host = target.slice(0, at).replace(/^\[|\]$/g, '');
      const upstream = connect(Number(target.slice(at + 1)), host, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length > 0) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      proxy.track(upstream);
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy.server = server;
    proxy.port = (server.address() as { port: number }).port;
    return proxy;
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
  }

  stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
