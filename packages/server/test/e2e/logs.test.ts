/**
 * The logs of a real `rivulet serve` (docs/operations.md, "Logs"): a child process whose standard
 * output is a pipe writes JSON lines — the start line, a refused request at warn with its route
 * template, a subscription halt with its stream, key and offsets, and the shutdown steps — and
 * readable lines when told to; a level drops what is below it. A server started from code says
 * at warn when its shutdown grace ran out.
 */
import { spawn } from 'node:child_process';
import { connect, createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EventType } from '@rivulet/contract';
import { startNodeServer } from '../../src/hosts/node/serve.js';
import { spawnServe, type CliServer } from '../helpers/cli.js';
import { tempDir } from '../helpers/server.js';

const BIN = fileURLToPath(new URL('../../../cli/bin/rivulet.js', import.meta.url));

type Line = Record<string, unknown> & { level: string; msg: string; time: string };

let server: CliServer | undefined;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await server?.kill('SIGKILL');
  server = undefined;
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function folder(): Promise<string> {
  const { dir, remove } = await tempDir('rivulet-logs-');
  cleanups.push(remove);
  return dir;
}

/** Every line written so far, each parsed as JSON (a line that is not JSON fails the test). */
function lines(cli: CliServer): Line[] {
  return cli
    .output()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line);
}

/** The first line matching `fields`, waiting for it up to a bound. */
async function lineWith(cli: CliServer, fields: Record<string, unknown>, timeoutMs = 10_000): Promise<Line> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const found = lines(cli).find((line) => Object.entries(fields).every(([k, v]) => line[k] === v));
    if (found) return found;
    if (performance.now() > deadline) throw new Error(`no line with ${JSON.stringify(fields)} within ${timeoutMs} ms; output:\n${cli.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A loopback port nothing listens on (listened on, then closed). */
function closedPort(): Promise<number> {
  const probe = createServer();
  return new Promise((resolve) => probe.listen(0, '127.0.0.1', () => {
    const { port } = probe.address() as AddressInfo;
    probe.close(() => resolve(port));
  }));
}

describe('rivulet serve logs', () => {
  it('writes JSON lines off a terminal: start, a refused request, a halt, the shutdown steps', async () => {
    const data = await folder();
    const tokens = join(data, 'tokens');
    await writeFile(tokens, 'secret-token-0123456789 shop\n');
    server = await spawnServe([
      '--data', data, '--tokens', tokens, '--allow-private-webhooks',
      '--max-delivery-attempts', '2', '--retry-base-ms', '1', '--retry-max-ms', '2', '--delivery-timeout-ms', '1000',
    ]);
    const start = await lineWith(server, { level: 'info', url: server.url });
    expect(start).toMatchObject({ version: expect.any(String), data, durability: 'full', mode: 'tokens' });
    expect(start.msg).toBe(`rivulet listening on ${server.url} (data ${data}, durability full, tokens)`);
    expect(Number.isNaN(Date.parse(start.time))).toBe(false);

    const refused = await fetch(`${server.url}/v1/streams/shop/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"a"}' });
    expect(refused.status).toBe(401);
    const warn = await lineWith(server, { msg: 'request refused' });
    expect(warn).toMatchObject({ level: 'warn', method: 'POST', route: 'POST /v1/streams/{path}', status: 401, code: 'UNAUTHENTICATED' });
    expect(typeof warn.durationMs).toBe('number');

    const port = await closedPort();
    const headers = { 'content-type': 'application/json', authorization: 'Bearer secret-token-0123456789' };
    const configure = await fetch(`${server.url}/v1/streams/hooks`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        type: EventType.subscriptionConfigured,
        payload: { subscriptionKey: 'k', receiver: { action: 'webhook-post', url: `http://127.0.0.1:${port}/hook`, delivery: { start: 'beginning', onFailingEvent: 'halt' } } },
      }),
    });
    expect(configure.status).toBe(200);
    const halt = await lineWith(server, { msg: 'subscription halted' });
    expect(halt).toMatchObject({ level: 'info', project: 'shop', stream: '/hooks', subscriptionKey: 'k', afterOffset: 0, attempts: 2, offset: 3 });
    expect(halt.error).toEqual(expect.stringContaining(String(port)));

    server.child.kill('SIGTERM');
    expect(await server.exited).toEqual({ code: 0, signal: null });
    const steps = lines(server).map((l) => l.msg).filter((m) => /shut|shutdown|stopped/.test(m));
    expect(steps).toEqual([
      'rivulet: SIGTERM: shutting down (requests in flight get up to 10000 ms; SIGTERM again to cut them)',
      'shutdown: not ready, listener closed',
      'shutdown: requests in flight answered',
      'shutdown: delivery stopped',
      'shutdown: stopped (storage closed, data folder unlocked)',
    ]);
  });

  it('writes readable lines with --log-format pretty', async () => {
    server = await spawnServe(['--data', await folder(), '--log-format', 'pretty', '--log-slow-ms', '0']);
    const first = server.output().split('\n')[0]!;
    expect(first).toMatch(/INFO.*rivulet listening on http:\/\/127\.0\.0\.1:\d+ \(data /);
    expect(() => JSON.parse(first) as unknown).toThrow();
  });

  it('writes nothing below RIVULET_LOG_LEVEL: at warn a refused request, and no start or shutdown line', async () => {
    const port = await closedPort();
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('RIVULET_')));
    const child = spawn(process.execPath, [BIN, 'serve', '--port', String(port), '--data', await folder()], {
      env: { ...env, RIVULET_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    // Decoded as a stream: a character whose UTF-8 bytes a pipe splits between two chunks stays whole.
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (s: string) => (output += s));
    child.stderr.on('data', (s: string) => (output += s));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = `http://127.0.0.1:${port}`;
    const deadline = performance.now() + 15_000;
    for (;;) {
      const up = await fetch(`${url}/livez`).then((r) => r.ok, () => false);
      if (up) break;
      if (performance.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`the server did not answer /livez within 15 s; output:\n${output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const bad = await fetch(`${url}/v1/streams/a`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"nope":1}' });
    expect(bad.status).toBe(400);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const written = output.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Line);
    expect(written.map((l) => [l.level, l.msg, l.status, l.code])).toEqual([['warn', 'request refused', 400, 'INVALID_INPUT']]);
  });
});

describe('request lines of a server started from code', () => {
  it('a flood of refused requests writes 20 lines, and the count of the rest when its second ends, with no request after it', async () => {
    const written: Array<{ message: string; suppressed?: unknown }> = [];
    const node = await startNodeServer({
      port: 0,
      data: await folder(),
      tokens: new Map([['secret-token-0123456789', 'shop']]),
      logger: { error: () => undefined, warn: (message, fields) => written.push({ message, suppressed: fields?.suppressed }) },
    });
    try {
      const flood = 25;
      const answers = await Promise.all(
        Array.from({ length: flood }, () => fetch(`${node.url}/v1/streams/a`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer wrong' }, body: '{"type":"a"}' })),
      );
      expect(answers.map((a) => a.status)).toEqual(new Array<number>(flood).fill(401));
      const deadline = performance.now() + 5_000;
      while (!written.some((w) => w.message === 'request lines suppressed') && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(written.filter((w) => w.message === 'request refused')).toHaveLength(20);
      expect(written.at(-1)).toEqual({ message: 'request lines suppressed', suppressed: flood - 20 });
    } finally {
      await node.close();
    }
  });
});

describe('shutdown lines of a server started from code', () => {
  it('say at warn that the grace period ran out when a request is still arriving, and at info otherwise', async () => {
    const run = async (hang: boolean) => {
      const written: Array<[string, string]> = [];
      const data = await folder();
      const node = await startNodeServer({
        port: 0,
        data,
        shutdownGraceMs: 200,
        logger: { error: () => undefined, warn: (m) => written.push(['warn', m]), info: (m) => written.push(['info', m]) },
      });
      const socket = connect(node.port, '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.on('error', () => undefined);
      // Half a body: the request has begun and cannot be answered before the rest arrives.
      if (hang) socket.write('POST /v1/streams/a HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"type":');
      await node.close();
      socket.destroy();
      return written.filter(([, m]) => m.startsWith('shutdown:'));
    };
    expect(await run(true)).toContainEqual(['warn', 'shutdown: the grace period is over, cutting what is still open']);
    const calm = await run(false);
    expect(calm).toContainEqual(['info', 'shutdown: requests in flight answered']);
    expect(calm.map(([level]) => level)).not.toContain('warn');
  });
});
