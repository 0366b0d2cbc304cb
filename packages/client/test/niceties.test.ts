/**
 * SDK niceties against a real server: `append` with `retry` (retry.ts) — refused without an
 * idempotency key on every event, sent again on UNAVAILABLE and network failures up to its bound,
 * committed once even when an answer was lost; `token` as a function (token.ts), asked before every
 * request and every RPC connect; deadlines with `AbortSignal.timeout`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, createClient, MAX_RETRY_ATTEMPTS, RivuletError, type FetchLike } from '@rivulet/client';
import { startTestServer, type TestServer } from './harness.js';

const TOKEN = 'niceties-admin-token-01';
const ROTATED = 'niceties-rotated-token-2';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({ tokens: new Map([[TOKEN, '*'], [ROTATED, '*']]) });
});

afterAll(async () => {
  await t?.dispose();
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

async function refusal(promise: Promise<unknown>): Promise<[string, string]> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(RivuletError);
  return [(error as RivuletError).code, (error as RivuletError).message];
}

/**
 * The global fetch, after `plan` decides each call: 'drop' fails before sending (a network error),
 * 'lose' sends it and loses the answer (the server committed), '503' answers UNAVAILABLE unsent.
 */
function flaky(plan: ReadonlyArray<'drop' | 'lose' | '503'>) {
  const calls: string[] = [];
  const fetch: FetchLike = async (url, init) => {
    const step = plan[calls.length];
    calls.push(step ?? 'send');
    if (step === 'drop') throw new TypeError('fetch failed', { cause: new Error('connect ECONNRESET') });
    if (step === '503') return Response.json({ error: { code: 'UNAVAILABLE', message: 'starting or shutting down' } }, { status: 503 });
    const response = await globalThis.fetch(url, init);
    if (step === 'lose') {
      await response.text();
      throw new TypeError('fetch failed', { cause: new Error('socket hang up') });
    }
    return response;
  };
  return { fetch, calls };
}

const fast = { initialDelayMs: 1, maxDelayMs: 2 };

describe('append with retry', () => {
  it('is refused without an idempotency key on every event, before anything is sent', async () => {
    const { fetch, calls } = flaky([]);
    const client = createClient({ url: t.url, token: TOKEN, fetch });
    expect(await refusal(client.append('/r/refused', { type: 'x' }, { retry: true }))).toEqual([
      'INVALID_INPUT',
      'append with retry needs an idempotencyKey on every event, and the event has none: a retried append without one could be committed twice',
    ]);
    expect(await refusal(client.append('/r/refused', [{ type: 'x', idempotencyKey: 'k1' }, { type: 'y' }], { retry: { attempts: 2 } }))).toEqual([
      'INVALID_INPUT',
      'append with retry needs an idempotencyKey on every event, and event 1 (counting from 0) has none: a retried append without one could be committed twice',
    ]);
    expect(calls).toEqual([]);
    // retry: false is a plain append.
    expect(await client.append('/r/refused', { type: 'x' }, { retry: false })).toHaveLength(1);
  });

  it('sends again after dropped connections and a 503, and commits once when an answer was lost', async () => {
    const { fetch, calls } = flaky(['drop', '503', 'lose', 'drop']);
    const client = createClient({ url: t.url, token: TOKEN, fetch });
    const events = [
      { type: 'order', payload: { id: 1 }, idempotencyKey: 'order-1' },
      { type: 'order', payload: { id: 2 }, idempotencyKey: 'order-2' },
    ];
    const committed = await client.append('/r/once', events, { retry: { attempts: 5, ...fast } });
    expect(calls).toEqual(['drop', '503', 'lose', 'drop', 'send']);
    expect(committed.map((e) => [e.offset, e.idempotencyKey])).toEqual([[2, 'order-1'], [3, 'order-2']]);
    const read = await createClient({ url: t.url, token: TOKEN }).getEvents('/r/once');
    expect(read.events.map((e) => e.type)).toEqual(['events.iterate.com/stream/created', 'order', 'order']);
  });

  it('gives up after its attempts with the last error; attempts: 3 survives two failures, not three', async () => {
    const two = flaky(['drop', 'drop']);
    const ok = await createClient({ url: t.url, token: TOKEN, fetch: two.fetch }).append('/r/bound', { type: 'x', idempotencyKey: 'b1' }, { retry: { attempts: 3, ...fast } });
    expect(ok[0]!.offset).toBe(2);
    expect(two.calls).toHaveLength(3);
    const three = flaky(['drop', 'drop', 'drop']);
    const [code, message] = await refusal(
      createClient({ url: t.url, token: TOKEN, fetch: three.fetch }).append('/r/bound', { type: 'x', idempotencyKey: 'b2' }, { retry: { attempts: 3, ...fast } }),
    );
    expect([code, message]).toEqual(['UNAVAILABLE', `cannot reach ${t.url}/v1/streams/r/bound: fetch failed (connect ECONNRESET)`]);
    expect(three.calls).toHaveLength(3);
  });

  it('does not retry an answer that is not UNAVAILABLE', async () => {
    const { fetch, calls } = flaky([]);
    const client = createClient({ url: t.url, token: TOKEN, fetch });
    await client.append('/r/conflict', { type: 'x', idempotencyKey: 'c1' });
    const [code] = await refusal(client.append('/r/conflict', { type: 'other', idempotencyKey: 'c1' }, { retry: { attempts: 5, ...fast } }));
    expect(code).toBe('CONFLICT');
    expect(calls).toEqual(['send', 'send']);
  });

  it('checks its options on both sides of the bounds', async () => {
    const client = createClient({ url: t.url, token: TOKEN });
    const event = { type: 'x', idempotencyKey: 'o1' };
    for (const attempts of [0, MAX_RETRY_ATTEMPTS + 1, 1.5]) {
      expect(await refusal(client.append('/r/options', event, { retry: { attempts } }))).toEqual([
        'INVALID_INPUT',
        `retry.attempts must be an integer from 1 to 20, got ${attempts}`,
      ]);
    }
    expect(await refusal(client.append('/r/options', event, { retry: { initialDelayMs: -1 } }))).toEqual([
      'INVALID_INPUT',
      'retry.initialDelayMs must be a number of milliseconds ≥ 0, got -1',
    ]);
    expect(await refusal(client.append('/r/options', event, { retry: { maxDelayMs: Number.NaN } }))).toEqual([
      'INVALID_INPUT',
      'retry.maxDelayMs must be a number of milliseconds ≥ 0, got NaN',
    ]);
    expect(await client.append('/r/options', event, { retry: { attempts: 1, initialDelayMs: 0, maxDelayMs: 0 } })).toHaveLength(1);
    expect(await client.append('/r/options', event, { retry: { attempts: MAX_RETRY_ATTEMPTS } })).toHaveLength(1);
  });

  it('stops waiting between attempts when the signal ends (AbortSignal.timeout)', async () => {
    const { fetch, calls } = flaky(Array(20).fill('drop'));
    const client = createClient({ url: t.url, token: TOKEN, fetch });
    const started = performance.now();
    const error = await rejection(
      client.append('/r/abort', { type: 'x', idempotencyKey: 'a1' }, { retry: { attempts: 20, initialDelayMs: 10_000 }, signal: AbortSignal.timeout(100) }),
    );
    expect((error as DOMException).name).toBe('TimeoutError');
    expect(performance.now() - started).toBeLessThan(5000);
    expect(calls).toEqual(['drop']);
  });
});

describe('token as a function', () => {
  it('is asked before every request, so a rotated token is used from the next call on', async () => {
    let current = TOKEN;
    let asked = 0;
    const client = createClient({
      url: t.url,
      token: async () => {
        asked++;
        return current;
      },
    });
    await client.append('/tok/a', { type: 'x' });
    current = ROTATED;
    await client.append('/tok/a', { type: 'y' });
    expect(asked).toBe(2);
    current = 'not-a-known-token-000';
    expect((await refusal(client.getEvents('/tok/a')))[0]).toBe('UNAUTHENTICATED');
    expect(asked).toBe(3);
  });

  it('a function that fails rejects the call unchanged; one that answers no string is INVALID_INPUT', async () => {
    const broken = createClient({
      url: t.url,
      token: () => {
        throw new Error('the vault is sealed');
      },
    });
    expect(((await rejection(broken.health())) as Error).message).toBe('the vault is sealed');
    const empty = createClient({ url: t.url, token: () => '' });
    expect(await refusal(empty.health())).toEqual(['INVALID_INPUT', 'the token function must answer a non-empty string, got an empty string']);
    const notString = createClient({ url: t.url, token: (() => 42) as unknown as () => string });
    expect(await refusal(notString.health())).toEqual(['INVALID_INPUT', 'the token function must answer a non-empty string, got number']);
  });

  it('is asked at every RPC connect', async () => {
    let asked = 0;
    const itx = await connect(t.url, { token: () => (asked++, TOKEN), reconnect: false });
    try {
      expect(asked).toBe(1);
      expect(itx.closed).toBe(false);
    } finally {
      itx.close();
    }
    const [code] = await refusal(connect(t.url, { token: () => 'not-a-known-token-000', reconnect: false }));
    expect(code).toBe('UNAUTHENTICATED');
  });
});

describe('deadlines with AbortSignal.timeout', () => {
  it('ends a call the server holds open, with the signal\'s TimeoutError', async () => {
    const client = createClient({ url: t.url, token: TOKEN });
    const started = performance.now();
    const error = await rejection(client.waitForEvent('/deadline/a', { eventTypes: ['never.example/none'], timeoutMs: 10_000 }, { signal: AbortSignal.timeout(150) }));
    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe('TimeoutError');
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('a signal that already ended sends nothing', async () => {
    const { fetch, calls } = flaky([]);
    const client = createClient({ url: t.url, token: TOKEN, fetch });
    const signal = AbortSignal.timeout(1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(((await rejection(client.getEvents('/deadline/b', { signal }))) as DOMException).name).toBe('TimeoutError');
    expect(calls).toEqual([]);
  });
});
