/**
 * Raw TCP servers on loopback for the outbound adapter's connection rules: each complete request
 * (head + Content-Length body) is handed to a script that writes whatever bytes it likes, so
 * tests can drop, cut or misframe an answer in a way node:http never would. Also a server that
 * accepts connections and never speaks (a TLS handshake that never completes).
 */
import { createServer, type Server, type Socket } from 'node:net';

export interface RawServer {
  port: number;
  url(path?: string): string;
  /** Every complete request, as received. */
  requests: string[];
  connections(): number;
  close(): Promise<void>;
}

async function listen(server: Server, sockets: Set<Socket>): Promise<{ port: number; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export async function rawServer(onRequest: (socket: Socket, index: number, request: string) => void): Promise<RawServer> {
  const requests: string[] = [];
  let connections = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        const request = buffered.slice(0, end + 4 + length);
        buffered = buffered.slice(end + 4 + length);
        requests.push(request);
        onRequest(socket, requests.length - 1, request);
      }
    });
  });
  const { port, close } = await listen(server, sockets);
  return { port, url: (path = '/hook') => `http://127.0.0.1:${port}${path}`, requests, connections: () => connections, close };
}

/** Accepts connections and never writes a byte. */
export async function silentServer(): Promise<{ port: number; accepted(): number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  const { port, close } = await listen(server, sockets);
  return { port, accepted: () => accepted, close };
}
