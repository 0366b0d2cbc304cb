/**
 * The Worker host's logs (docs/operations.md, "Logs"), read from what Miniflare's workerd writes
 * for the Worker's console: the same JSON lines as the Node host — a subscription halt with its
 * stream, key and offsets, a refused request with its route template — and the variables that set
 * them.
 */
import { createServer, type AddressInfo } from 'node:net';
import { EventType } from '@rivulet/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logSlowMsOf, type WorkerEnv } from '../../src/hosts/worker/env.js';
import { startWorkerHost, type WorkerTestHost } from '../helpers/worker-host.js';

let host: WorkerTestHost;

beforeAll(async () => {
  host = await startWorkerHost({ maxDeliveryAttempts: 2, retryBaseMs: 1, retryMaxMs: 2, deliveryTimeoutMs: 1000 });
}, 60_000);

afterAll(async () => {
  await host?.close();
});

type Line = Record<string, unknown> & { level: string; msg: string };

/** The first JSON line matching `fields`, waiting for it up to a bound. Lines that are not JSON (workerd's own) are passed over. */
async function lineWith(fields: Record<string, unknown>, timeoutMs = 10_000): Promise<Line> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    for (const text of host.logs) {
      if (!text.startsWith('{')) continue;
      const line = JSON.parse(text) as Line;
      if (Object.entries(fields).every(([k, v]) => line[k] === v)) return line;
    }
    if (performance.now() > deadline) throw new Error(`no line with ${JSON.stringify(fields)} within ${timeoutMs} ms; lines:\n${host.logs.join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function closedPort(): Promise<number> {
  const probe = createServer();
  return new Promise((resolve) =>
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    }),
  );
}

describe('Worker host logs at RIVULET_LOG_LEVEL warn', () => {
  it('writes the refused request and drops the halt, an info line', async () => {
    const quiet = await startWorkerHost({ logLevel: 'warn', maxDeliveryAttempts: 1, retryBaseMs: 1, retryMaxMs: 2, deliveryTimeoutMs: 1000 });
    try {
      const port = await closedPort();
      await quiet.api.append('/logs/quiet', [
        {
          type: EventType.subscriptionConfigured,
          payload: { subscriptionKey: 'k', receiver: { action: 'webhook-post', url: `http://127.0.0.1:${port}/hook`, delivery: { start: 'beginning', onFailingEvent: 'halt' } } },
        },
      ]);
      const deadline = performance.now() + 10_000;
      while (!(await quiet.api.state('/logs/quiet')).core?.subscriptions.outbound.byKey.k?.deliveryHalted) {
        if (performance.now() > deadline) throw new Error('the subscription did not halt within 10 s');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const bad = await fetch(`${quiet.url}/v1/streams/logs/x`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"nope":1}' });
      expect(bad.status).toBe(400);
      const until = performance.now() + 10_000;
      while (!quiet.logs.some((l) => l.includes('"msg":"request refused"')) && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
      const levels = quiet.logs.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as Line).level);
      expect(levels).toContain('warn');
      expect(levels).not.toContain('info');
    } finally {
      await quiet.close();
    }
  }, 60_000);
});

describe('Worker host logs', () => {
  it('a webhook to a closed port halts, and the halt is one info line with stream, key and offsets', async () => {
    const port = await closedPort();
    await host.api.append('/logs/hooks', [
      {
        type: EventType.subscriptionConfigured,
        payload: { subscriptionKey: 'k', receiver: { action: 'webhook-post', url: `http://127.0.0.1:${port}/hook`, delivery: { start: 'beginning', onFailingEvent: 'halt' } } },
      },
    ]);
    const halt = await lineWith({ msg: 'subscription halted' });
    expect(halt).toMatchObject({ level: 'info', stream: '/logs/hooks', subscriptionKey: 'k', afterOffset: 0, attempts: 2, offset: 3 });
    expect(typeof halt.error).toBe('string');
    expect(host.logs.filter((l) => l.includes('"msg":"subscription halted"'))).toHaveLength(1);
    expect(Number.isNaN(Date.parse(halt.time as string))).toBe(false);
  });

  it('a refused request is a warn line with method, route template, status and code', async () => {
    const bad = await fetch(`${host.url}/v1/streams/logs/x`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"nope":1}' });
    expect(bad.status).toBe(400);
    const warn = await lineWith({ msg: 'request refused', status: 400 });
    expect(warn).toMatchObject({ level: 'warn', method: 'POST', route: 'POST /v1/streams/{path}', code: 'INVALID_INPUT' });
  });

  it('RIVULET_LOG_SLOW_MS is a whole number of ms; 0 is accepted, anything else refused', () => {
    const env = (value?: string) => ({ RIVULET_LOG_SLOW_MS: value }) as unknown as WorkerEnv;
    expect([logSlowMsOf(env()), logSlowMsOf(env('')), logSlowMsOf(env('0')), logSlowMsOf(env('250'))]).toEqual([1000, 1000, 0, 250]);
    for (const bad of ['-1', '1.5', 'soon']) {
      expect(() => logSlowMsOf(env(bad))).toThrow(`RIVULET_LOG_SLOW_MS must be a whole number of milliseconds, got "${bad}"`);
    }
  });
});
