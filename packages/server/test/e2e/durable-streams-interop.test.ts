/**
 * End-to-end: the public Durable Streams client against Rivulet, both ways (docs/durable-streams.md
 * "One namespace"). What the client writes is copied on by a Rivulet copy subscription and
 * delivered by a webhook; a stream that Rivulet's own API appends to is tailed by the client.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DurableStream, IdempotentProducer } from '@durable-streams/client';
import { HookServer } from '../helpers/hook-server.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { caughtUp, configured, copyTo, waitForCopies } from '../helpers/subscriptions.js';

let server: TestServer;
let hooks: HookServer;

beforeAll(async () => {
  server = await startTestServer({ retryBaseMs: 20, retryMaxMs: 100 });
  hooks = await HookServer.start();
});

afterAll(async () => {
  await hooks?.stop();
  await server?.close();
});

const MESSAGE = 'durable-streams/message';

describe('the Durable Streams client and Rivulet', () => {
  it('writes what a copy subscription copies on and a webhook delivers', async () => {
    const source = await DurableStream.create({ url: `${server.url}/v1/stream/interop/orders`, contentType: 'application/json' });
    await server.api.append('/interop/orders', [
      configured({ subscriptionKey: 'copy', filter: { eventTypes: [MESSAGE] }, receiver: copyTo('/interop/copies', { start: 'beginning' }) }),
      configured({
        subscriptionKey: 'hook',
        filter: { eventTypes: [MESSAGE] },
        receiver: { action: 'webhook-post', url: hooks.url('/orders'), delivery: { start: 'beginning', onFailingEvent: 'halt' } },
      }),
    ]);
    const producer = new IdempotentProducer(source, 'shop', { autoClaim: true });
    for (const id of [1, 2, 3]) producer.append(JSON.stringify({ id }));
    await producer.flush();
    await producer.close();

    const copies = await waitForCopies(server.api, '/interop/copies', 3);
    expect(copies.map((e) => [e.type, e.payload])).toEqual([1, 2, 3].map((id) => [MESSAGE, { value: { id } }]));
    await caughtUp(server.api, '/interop/orders', 'hook');
    expect(hooks.envelopes().map((envelope) => envelope.event.payload)).toEqual([1, 2, 3].map((id) => ({ value: { id } })));

    // The copies are messages of a JSON stream to the client in turn.
    const copied = await new DurableStream({ url: `${server.url}/v1/stream/interop/copies` }).stream<{ id: number }>({ live: false });
    expect(await copied.json()).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
  });

  it('tails a stream that the Rivulet API appends to', async () => {
    await server.api.append('/interop/feed', { type: 'shop.example/opened', payload: { n: 0 } });
    const feed = new DurableStream({ url: `${server.url}/v1/stream/interop/feed` });
    const res = await feed.stream<{ type: string; payload: { n: number } }>({ live: 'long-poll' });
    const seen: number[] = [];
    const done = new Promise<void>((resolve) => {
      res.subscribeJson((batch) => {
        for (const item of batch.items) seen.push(item.payload.n);
        if (seen.length >= 3) resolve();
      });
    });
    await server.api.append('/interop/feed', { type: 'shop.example/changed', payload: { n: 1 } });
    await server.api.append('/interop/feed', [
      { type: 'events.iterate.com/stream/paused', payload: {} },
      { type: 'events.iterate.com/stream/resumed', payload: {} },
      { type: 'shop.example/changed', payload: { n: 2 } },
    ]);
    await done;
    res.cancel();
    expect(seen).toEqual([0, 1, 2]);
  });
});
