import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type CommittedEvent, type FetchLike, type ReconnectInfo, type RivuletClient } from '@rivulet/client';
import { collect, startTestServer, type TestServer } from './harness.js';

let t: TestServer;
let client: RivuletClient;

beforeEach(async () => {
  t = await startTestServer();
  client = createClient({ url: t.url });
});

afterEach(async () => {
  await t.dispose();
});

const offsets = (events: readonly CommittedEvent[]) => events.map((e) => e.offset);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Records the Last-Event-ID of every SSE request. */
function recordingFetch(inner: FetchLike = (input, init) => fetch(input, init)) {
  const lastEventIds: (string | null)[] = [];
  const wrapped: FetchLike = (input, init) => {
    if (input.includes('live=sse')) lastEventIds.push(new Headers(init.headers).get('last-event-id'));
    return inner(input, init);
  };
  return { fetch: wrapped, lastEventIds };
}

describe('tail', () => {
  it('replays, then goes live with no gap, and ends when the stream is destroyed', async () => {
    await client.append('/t', [{ type: 'a' }, { type: 'b' }]);
    let destroyed = 0;
    const tail = collect(client.tail('t', { onDestroyed: () => destroyed++ }));
    await tail.until(3);
    await client.append('/t', { type: 'c' });
    await client.append('/t', [{ type: 'd' }, { type: 'e', ephemeral: true }]);
    await tail.until(6);
    await client.destroy('/t');
    await tail.done;
    expect(offsets(tail.items)).toEqual(range(1, 6));
    expect(tail.items.map((e) => e.type).slice(1)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(tail.items[5]?.ephemeral).toBe(true);
    expect(destroyed).toBe(1);
  });

  it('opened before the stream exists, sees it being created', async () => {
    let opened: () => void = () => undefined;
    const open = new Promise<void>((resolve) => {
      opened = resolve;
    });
    const tail = collect(client.tail('/later', { onOpen: () => opened() }));
    await open;
    await client.append('/later', { type: 'first' });
    await tail.until(2);
    await client.destroy('/later');
    await tail.done;
    expect(tail.items.map((e) => e.type)).toEqual(['events.iterate.com/stream/created', 'first']);
  });

  it('starts after afterOffset and filters by event type', async () => {
    await client.append('/f', [{ type: 'a' }, { type: 'b' }, { type: 'a' }, { type: 'b' }]);
    const tail = collect(client.tail('/f', { afterOffset: 3, eventTypes: ['b'] }));
    await tail.until(1);
    await client.append('/f', [{ type: 'a' }, { type: 'b' }]);
    await tail.until(2);
    await client.destroy('/f');
    await tail.done;
    expect(offsets(tail.items)).toEqual([5, 7]);
  });

  it('ends quietly when aborted, and refuses a bad path up front', async () => {
    const controller = new AbortController();
    await client.append('/q', { type: 'a' });
    const tail = collect(client.tail('/q', { signal: controller.signal }));
    await tail.until(2);
    controller.abort();
    await tail.done;
    expect(offsets(tail.items)).toEqual([1, 2]);

    const bad = collect(client.tail('/q/a:b'));
    await expect(bad.done).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('resumes with Last-Event-ID when the connection breaks mid-frame: no duplicate, no gap', async () => {
    await client.append('/r', [{ type: 'a' }, { type: 'b' }, { type: 'c' }, { type: 'd' }]);
    // The first SSE response is cut inside the frame of offset 3 and then fails like a dropped
    // socket; the client must discard the half frame and ask again after offset 2.
    let cut = false;
    const cutting: FetchLike = async (input, init) => {
      const response = await fetch(input, init);
      if (!input.includes('live=sse') || cut || !response.body) return response;
      cut = true;
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      const encoder = new TextEncoder();
      let seen = '';
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { done, value } = await reader.read();
          if (done) return controller.close();
          seen += decoder.decode(value, { stream: true });
          const at = seen.indexOf('id: 3\n');
          if (at === -1) {
            controller.enqueue(encoder.encode(seen.slice(sent)));
            sent = seen.length;
            return;
          }
          controller.enqueue(encoder.encode(seen.slice(sent, at + 'id: 3\nevent: event\ndata: {"pa'.length)));
          await reader.cancel();
          controller.error(new TypeError('terminated'));
        },
        cancel: () => reader.cancel(),
      });
      return new Response(body, { status: response.status, headers: response.headers });
    };
    const { fetch: recording, lastEventIds } = recordingFetch(cutting);
    const reconnects: ReconnectInfo[] = [];
    const tail = collect(
      createClient({ url: t.url, fetch: recording }).tail('/r', {
        reconnect: { initialDelayMs: 1 },
        onReconnect: (info) => reconnects.push(info),
      }),
    );
    await tail.until(5);
    await client.append('/r', { type: 'e' });
    await tail.until(6);
    await client.destroy('/r');
    await tail.done;
    expect(offsets(tail.items)).toEqual(range(1, 6));
    expect(lastEventIds).toEqual([null, '2']);
    expect(reconnects).toMatchObject([{ attempt: 1, lastOffset: 2, error: { code: 'UNAVAILABLE' } }]);
  });

  it('survives a server restart on the same data folder: no duplicate, no gap', async () => {
    await client.append('/restart', [{ type: 'a' }, { type: 'b' }]);
    const { fetch: recording, lastEventIds } = recordingFetch();
    let resolveDropped: () => void = () => undefined;
    const dropped = new Promise<void>((resolve) => {
      resolveDropped = resolve;
    });
    const tail = collect(
      createClient({ url: t.url, fetch: recording }).tail('/restart', {
        reconnect: { initialDelayMs: 10, maxDelayMs: 50 },
        onReconnect: () => resolveDropped(),
      }),
    );
    await tail.until(3);
    await t.stop();
    await dropped;
    await t.restart();
    // Appended while the tail may still be reconnecting: it gets them by replay or live.
    await client.append('/restart', [{ type: 'c' }, { type: 'd' }]);
    await tail.until(5);
    await client.append('/restart', { type: 'e' });
    await tail.until(6);
    await client.destroy('/restart');
    await tail.done;
    expect(offsets(tail.items)).toEqual(range(1, 6));
    expect(lastEventIds[0]).toBeNull();
    expect(lastEventIds.length).toBeGreaterThan(1);
    expect(lastEventIds.slice(1).every((id) => id === '3')).toBe(true);
  });

  it('ends with onDestroyed when the stream was destroyed and recreated while it was disconnected', async () => {
    await client.append('/relife', [{ type: 'a' }, { type: 'b' }, { type: 'c' }, { type: 'd' }]);
    const { fetch: recording } = recordingFetch();
    let resolveDropped: () => void = () => undefined;
    const dropped = new Promise<void>((resolve) => {
      resolveDropped = resolve;
    });
    let destroyed = 0;
    const tail = collect(
      createClient({ url: t.url, fetch: recording }).tail('/relife', {
        reconnect: { initialDelayMs: 10, maxDelayMs: 50 },
        onReconnect: () => resolveDropped(),
        onDestroyed: () => destroyed++,
      }),
    );
    await tail.until(5);
    await t.stop();
    await dropped;
    // After the restart the stream is destroyed and recreated with more events than the old head.
    // Whenever the tail reconnects, it must not read the new lifetime from its old cursor (offset 5):
    // it ends with onDestroyed either way.
    await t.restart();
    await client.destroy('/relife');
    await client.append('/relife', Array.from({ length: 8 }, (_, i) => ({ type: `new-${i}` })));
    await tail.done;
    expect(offsets(tail.items)).toEqual(range(1, 5));
    expect(destroyed).toBe(1);
  });
});
