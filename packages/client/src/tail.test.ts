import { RivuletError, type CommittedEvent } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { HttpClient, type FetchLike } from './http.js';
import { tailEvents, type ReconnectInfo, type TailOptions } from './tail.js';

/** One scripted answer per request: an SSE body, an HTTP error, or a network failure. */
type Answer = { sse: string; breakAfter?: boolean } | { status: number; body: string } | { networkError: true };

const url = 'http://rivulet.test/v1/streams/a?live=sse';

function frame(offset: number): string {
  const event: CommittedEvent = { path: '/a', offset, createdAt: '2026-01-01T00:00:00.000Z', type: 't' };
  return `id: ${offset}\nevent: event\ndata: ${JSON.stringify(event)}\n\n`;
}

function scripted(answers: Answer[]) {
  const requests: { lastEventId: string | null }[] = [];
  const fetch: FetchLike = async (_input, init) => {
    requests.push({ lastEventId: new Headers(init.headers).get('last-event-id') });
    const answer = answers.shift();
    if (!answer) throw new Error('no more scripted answers');
    if ('networkError' in answer) throw new TypeError('fetch failed');
    if ('status' in answer) return new Response(answer.body, { status: answer.status });
    let pulls = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulls++ === 0) controller.enqueue(new TextEncoder().encode(answer.sse));
        else if (answer.breakAfter) controller.error(new TypeError('terminated'));
        else controller.close();
      },
    });
    return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
  };
  return { http: new HttpClient({ fetch }), requests };
}

async function collect(http: HttpClient, options: TailOptions = {}): Promise<number[]> {
  const offsets: number[] = [];
  for await (const e of tailEvents(http, url, { reconnect: { initialDelayMs: 1, maxDelayMs: 2 }, ...options })) {
    offsets.push(e.offset);
  }
  return offsets;
}

async function rejection(promise: Promise<unknown>): Promise<RivuletError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof RivuletError) return error;
    throw error;
  }
  throw new Error('expected a RivuletError');
}

const destroyed = 'event: destroyed\ndata: {}\n\n';
const unauthenticated = JSON.stringify({ error: { code: 'UNAUTHENTICATED', message: 'unknown token' } });
const unavailable = JSON.stringify({ error: { code: 'UNAVAILABLE', message: 'shutting down' } });

describe('tail over SSE', () => {
  it('ends at "event: destroyed" and reports it', async () => {
    const { http } = scripted([{ sse: frame(1) + frame(2) + destroyed }]);
    let reported = 0;
    expect(await collect(http, { onDestroyed: () => reported++ })).toEqual([1, 2]);
    expect(reported).toBe(1);
  });

  it('reconnects with Last-Event-ID after a broken connection and drops replayed duplicates', async () => {
    const { http, requests } = scripted([
      { sse: frame(1) + frame(2) + 'id: 3\nevent: event\ndata: {"pa', breakAfter: true },
      { sse: frame(2) + frame(3) + frame(4) + destroyed },
    ]);
    const reconnects: ReconnectInfo[] = [];
    const opens: { lastOffset: number; reconnected: boolean }[] = [];
    expect(await collect(http, { onReconnect: (info) => reconnects.push(info), onOpen: (info) => opens.push(info) })).toEqual([
      1, 2, 3, 4,
    ]);
    expect(requests.map((r) => r.lastEventId)).toEqual([null, '2']);
    expect(opens).toEqual([
      { lastOffset: 0, reconnected: false },
      { lastOffset: 2, reconnected: true },
    ]);
    expect(reconnects).toHaveLength(1);
    expect(reconnects[0]).toMatchObject({ attempt: 1, lastOffset: 2 });
    expect(reconnects[0]!.error?.code).toBe('UNAVAILABLE');
  });

  it('reconnects when the server ends the response without destroying the stream', async () => {
    const { http, requests } = scripted([{ sse: frame(5) }, { sse: frame(6) + destroyed }]);
    expect(await collect(http, { afterOffset: 4 })).toEqual([5, 6]);
    expect(requests.map((r) => r.lastEventId)).toEqual([null, '5']);
  });

  it('keeps retrying refused reconnects with a growing delay, then resumes where it stopped', async () => {
    const { http, requests } = scripted([
      { sse: frame(1) },
      { networkError: true },
      { status: 503, body: unavailable },
      { sse: frame(2) + destroyed },
    ]);
    const delays: number[] = [];
    const offsets = await collect(http, {
      reconnect: { initialDelayMs: 1, maxDelayMs: 1000 },
      onReconnect: (info) => delays.push(info.delayMs),
    });
    expect(offsets).toEqual([1, 2]);
    expect(delays).toEqual([1, 1, 2]);
    expect(requests.map((r) => r.lastEventId)).toEqual([null, '1', '1', '1']);
  });

  it('gives up after maxAttempts consecutive failures with the last error', async () => {
    const { http } = scripted([{ sse: frame(1) }, { networkError: true }, { networkError: true }]);
    const error = await rejection(collect(http, { reconnect: { initialDelayMs: 1, maxAttempts: 2 } }));
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.message).toContain('cannot reach');
  });

  it('fails fast when the first connection is refused', async () => {
    const { http, requests } = scripted([{ networkError: true }]);
    const error = await rejection(collect(http));
    expect(error.code).toBe('UNAVAILABLE');
    expect(requests).toHaveLength(1);
  });

  it('does not retry an error that retrying cannot fix', async () => {
    const { http } = scripted([{ sse: frame(1) }, { status: 401, body: unauthenticated }]);
    const error = await rejection(collect(http));
    expect(error.code).toBe('UNAUTHENTICATED');
    expect(error.message).toBe('unknown token');
  });

  it('refuses an answer that is not an event stream instead of reconnecting forever', async () => {
    const fetch: FetchLike = async () => new Response('<html>login</html>', { headers: { 'content-type': 'text/html' } });
    const error = await rejection(collect(new HttpClient({ fetch })));
    expect([error.code, error.message]).toEqual(['INTERNAL', 'expected an event stream, got text/html']);
  });

  it('reports a frame that is not a committed event as INTERNAL', async () => {
    const { http } = scripted([{ sse: 'event: event\ndata: [1]\n\n' }]);
    expect((await rejection(collect(http))).code).toBe('INTERNAL');
  });

  it('ends quietly when the caller aborts', async () => {
    const { http } = scripted([{ sse: frame(1) + frame(2) + frame(3) }]);
    const controller = new AbortController();
    const offsets: number[] = [];
    for await (const e of tailEvents(http, url, { signal: controller.signal })) {
      offsets.push(e.offset);
      if (e.offset === 2) controller.abort();
    }
    expect(offsets).toEqual([1, 2]);
  });
});
