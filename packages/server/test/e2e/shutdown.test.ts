/**
 * Graceful shutdown of `rivulet serve` (protocol §16.9): a rolling restart under load. Twenty
 * keep-alive clients append without pause while the server is stopped with SIGTERM and started
 * again on the same port and data folder, ten times. Every request a client sent before the
 * SIGTERM must be answered (no reset, no hang-up), the process must exit by itself with status 0,
 * and every event the store holds afterwards must have been answered to its client: no append is
 * committed but left unanswered. Requests sent after the SIGTERM may be refused (the listener is
 * closed) and are retried, as a client of a restarting server would.
 */
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startNodeServer } from '../../src/hosts/node/serve.js';
import { spawnServe, type CliServer } from '../helpers/cli.js';
import { Api } from '../helpers/http.js';
import { tempDir } from '../helpers/server.js';

const CLIENTS = 20;
const ROUNDS = 10;
const STREAMS = ['/roll/a', '/roll/b', '/roll/c', '/roll/d'];

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

interface Outcome {
  status?: number;
  error?: string;
}

function post(agent: Agent, port: number, path: string, body: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = request(
      { agent, host: '127.0.0.1', port, method: 'POST', path: `/v1/streams${path}`, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode! }));
        res.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
    req.end(body);
  });
}

describe('graceful shutdown', () => {
  it(`a rolling restart under load (SIGTERM and restart, ${ROUNDS} times): no reset for requests sent before the signal, nothing committed unanswered`, { timeout: 120_000 }, async () => {
    const folder = await tempDir('rivulet-shutdown-');
    cleanups.push(folder.remove);
    const data = folder.dir;
    const port = await freePort();
    const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
    cleanups.push(async () => agent.destroy());
    let server: CliServer | undefined;
    cleanups.push(async () => server?.kill('SIGKILL'));

    const answered = new Set<string>();
    const broken: string[] = [];
    let terminating = false;
    let stop = false;
    let answersThisRound = 0;

    const client = async (c: number) => {
      for (let i = 0; !stop; i++) {
        const id = `c${c}-${i}`;
        const body = JSON.stringify({ type: 'roll.test/appended', payload: { id }, idempotencyKey: id });
        const sentBeforeSignal = !terminating;
        const outcome = await post(agent, port, STREAMS[c % STREAMS.length]!, body);
        if (outcome.status === 200) {
          answered.add(id);
          answersThisRound++;
        } else if (outcome.status !== undefined) {
          broken.push(`${id}: status ${outcome.status}`);
        } else if (sentBeforeSignal) {
          broken.push(`${id}: ${outcome.error} (sent before SIGTERM)`);
        } else {
          // Refused while the server restarts: wait a little, as a client would.
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
    };

    server = await spawnServe(['--data', data, '--port', String(port)]);
    const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));
    for (let round = 0; round < ROUNDS; round++) {
      answersThisRound = 0;
      const deadline = Date.now() + 5_000;
      while (answersThisRound < 150 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      expect(answersThisRound, `round ${round}: the clients got answers`).toBeGreaterThanOrEqual(150);
      terminating = true;
      const exit = await server.kill('SIGTERM');
      expect(exit, `round ${round}: exits by itself after SIGTERM; output:\n${server.output()}`).toEqual({ code: 0, signal: null });
      server = await spawnServe(['--data', data, '--port', String(port)]);
      terminating = false;
    }
    stop = true;
    await Promise.all(clients);

    expect(broken).toEqual([]);
    const api = new Api(server.url);
    const committed = new Set<string>();
    for (const path of STREAMS) {
      for (const event of await api.readAll(path)) if (event.type === 'roll.test/appended') committed.add((event.payload as { id: string }).id);
    }
    const unanswered = [...committed].filter((id) => !answered.has(id));
    expect(unanswered).toEqual([]);
    // And every answered append is there (nothing acknowledged was lost on the way down).
    expect([...answered].filter((id) => !committed.has(id))).toEqual([]);
  });

  it('while it drains: /healthz and /readyz answer 503 (/livez 200), a waitForEvent is answered at once, live SSE ends cleanly, RPC sessions get close 1001', async () => {
    const folder = await tempDir('rivulet-shutdown-');
    cleanups.push(folder.remove);
    const server = await startNodeServer({ port: 0, data: folder.dir, logger: { error: () => undefined, warn: () => undefined } });
    let closed = false;
    cleanups.push(async () => (closed ? undefined : server.close()));
    // One kept-alive connection per probe: while draining, each answer closes its connection.
    const agents = ['/healthz', '/readyz', '/livez'].map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
    cleanups.push(async () => agents.forEach((a) => a.destroy()));
    const port = server.port;
    const agentOf: Record<string, Agent> = { '/healthz': agents[0]!, '/readyz': agents[1]!, '/livez': agents[2]! };
    const get = (path: string) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        request({ agent: agentOf[path]!, host: '127.0.0.1', port, path }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        })
          .on('error', reject)
          .end();
      });
    expect((await get('/healthz')).status).toBe(200);
    expect((await get('/readyz')).status).toBe(200);
    expect((await get('/livez')).status).toBe(200);

    const sse = await fetch(`${server.url}/v1/streams/drain/a?live=sse`);
    const reader = sse.body!.getReader();
    await reader.read(); // the opening comment: the reader is live
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/v1/rpc`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const wsClosed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    const wait = fetch(`${server.url}/v1/streams/drain/a:waitForEvent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ afterOffset: 0, timeoutMs: 60_000, eventTypes: ['never'] }),
    });
    await new Promise((resolve) => setTimeout(resolve, 50));

    const started = performance.now();
    const closing = server.close().then(() => (closed = true));
    const health = await get('/healthz');
    expect(health.status).toBe(503);
    const ready = await get('/readyz');
    expect([ready.status, JSON.parse(ready.text).error.message]).toEqual([503, 'not ready: starting or shutting down']);
    expect((await get('/livez')).status).toBe(200);
    expect(JSON.parse(health.text).error).toMatchObject({ code: 'UNAVAILABLE' });
    const waited = await wait;
    expect(waited.status).toBe(503);
    expect((await waited.json()).error.message).toContain('server-stopped');
    let sseDone = false;
    while (!sseDone) sseDone = (await reader.read()).done;
    expect(await wsClosed).toBe(1001);
    await closing;
    // None of these waited for the grace period.
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
