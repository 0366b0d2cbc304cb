/**
 * A client that goes away in the middle of its request body is a client abort, not a fault of the
 * server (protocol §15.2, §16.7): no internal error is logged, and the request is counted under
 * status 499, whichever entrance was reading it — the Hono app, the native append path on
 * node:http after a hand-over, or the connection front (which counts nothing it never answered).
 * Node host: the raw socket is the point.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNodeServer, type RunningServer } from '../../src/hosts/node/serve.js';

const errors: string[] = [];
const warnings: string[] = [];
let server: RunningServer;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rivulet-aborts-'));
  server = await startNodeServer({
    port: 0,
    data: dir,
    logger: {
      error: (message, error) => errors.push(`${message} ${String(error)}`),
      warn: (message, fields) => warnings.push(`${String(fields?.route)}: ${message}`),
    },
  });
});

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Sends `before` (whole requests), then a request whose body is cut short, then closes the socket. */
async function cutShort(before: string, head: string): Promise<void> {
  const socket = connect(server.port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.on('data', () => undefined);
  socket.write(`${before}${head}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"type":`);
  await new Promise((resolve) => setTimeout(resolve, 50));
  socket.destroy();
  await new Promise((resolve) => setTimeout(resolve, 50));
}

function count(metrics: string, method: string, route: string, status: string): number {
  const labels = `method="${method}",route="${route}",status="${status}"`;
  const line = metrics.split('\n').find((l) => l.startsWith(`rivulet_http_request_duration_seconds_count{${labels}}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('client aborts', () => {
  it('are counted under 499 and logged as one line, never as internal errors, on every entrance', async () => {
    // The Hono app (a :method is always node:http's).
    await cutShort('', 'POST /v1/streams/aborts/a:subscribeToEventsFrom HTTP/1.1\r\nHost: h\r\n');
    // The native append path: the connection was handed to node:http by its first request.
    await cutShort('GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n', 'POST /v1/streams/aborts/a HTTP/1.1\r\nHost: h\r\n');
    // The connection front.
    await cutShort('', 'POST /v1/streams/aborts/b HTTP/1.1\r\nHost: h\r\n');

    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(errors).toEqual([]);
    expect(count(metrics, 'POST', '/v1/streams/{path}:subscribeToEventsFrom', '499')).toBe(1);
    expect(count(metrics, 'POST', '/v1/streams/{path}', '499')).toBe(1);
    expect(metrics).not.toMatch(/status="500"/);
    expect(warnings).toEqual([
      'POST /v1/streams/{path}:subscribeToEventsFrom: the client closed the connection before its request had arrived',
      'POST /v1/streams/{path}: the client closed the connection before its request had arrived',
    ]);
    // Nothing was appended by the requests cut short.
    expect((await (await fetch(`${server.url}/v1/streams/aborts/a`)).json()).streamMaxOffset).toBe(0);
  });
});
