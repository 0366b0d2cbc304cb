import { describe, expect, it } from 'vitest';
import { RivuletError, type AppendEvent, type CommittedEvent, type RivuletClient } from '@rivulet/client';
import { BATCH_MAX_BYTES, BATCH_MAX_EVENTS, Batcher, type Item } from './batches.js';
import { LineError } from './events.js';

/** A client whose append records each call and refuses any batch holding a poisoned type. */
function fakeClient(refuse?: { type: string; code: string }) {
  const calls: { path: string; lines: number[] }[] = [];
  let offset = 1;
  const client = {
    append: async (path: string, events: AppendEvent | readonly AppendEvent[]) => {
      const batch = events as readonly AppendEvent[];
      calls.push({ path, lines: batch.map((e) => (e.payload as { line: number }).line) });
      const bad = batch.findIndex((e) => e.type === refuse?.type);
      if (bad >= 0) throw new RivuletError(refuse!.code as 'INVALID_INPUT', `events[${bad}]: refused`);
      return batch.map((e) => ({ ...e, path, offset: ++offset, createdAt: '2026-01-01T00:00:00.000Z' }) as CommittedEvent);
    },
  } as unknown as RivuletClient;
  return { client, calls };
}

const item = (line: number, path = '/a', type = 't', pad = ''): Item => ({ line, path, event: { type, payload: { line, pad } } });
const size = (i: Item) => Buffer.byteLength(JSON.stringify(i.event));

async function run(batcher: Batcher, items: Item[]): Promise<void> {
  for (const i of items) await batcher.add(i);
  await batcher.flush();
}

describe('Batcher', () => {
  it('holds at most BATCH_MAX_EVENTS events in a batch: that many go in one, one more in a second', async () => {
    const exact = fakeClient();
    await run(new Batcher(exact.client, { committed: () => undefined }), Array.from({ length: BATCH_MAX_EVENTS }, (_, i) => item(i + 1)));
    expect(exact.calls.map((c) => c.lines.length)).toEqual([BATCH_MAX_EVENTS]);
    const over = fakeClient();
    await run(new Batcher(over.client, { committed: () => undefined }), Array.from({ length: BATCH_MAX_EVENTS + 1 }, (_, i) => item(i + 1)));
    expect(over.calls.map((c) => c.lines.length)).toEqual([BATCH_MAX_EVENTS, 1]);
  });

  it('holds at most maxBytes of JSON: exactly the limit fits, one byte more starts a new batch', async () => {
    const first = item(1);
    const second = item(2);
    const limits = { maxEvents: 100, maxBytes: size(first) + size(second) };
    const fits = fakeClient();
    await run(new Batcher(fits.client, { limits, committed: () => undefined }), [first, second]);
    expect(fits.calls.map((c) => c.lines)).toEqual([[1, 2]]);
    const over = fakeClient();
    await run(new Batcher(over.client, { limits, committed: () => undefined }), [first, item(2, '/a', 't', 'x')]);
    expect(over.calls.map((c) => c.lines)).toEqual([[1], [2]]);
    expect(BATCH_MAX_BYTES).toBe(1024 * 1024);
  });

  it('sends an event larger than maxBytes alone, and starts a new batch for another stream', async () => {
    const { client, calls } = fakeClient();
    const limits = { maxEvents: 100, maxBytes: 60 };
    await run(new Batcher(client, { limits, committed: () => undefined }), [item(1), item(2, '/a', 't', 'y'.repeat(100)), item(3), item(4, '/b')]);
    expect(calls).toEqual([
      { path: '/a', lines: [1] },
      { path: '/a', lines: [2] },
      { path: '/a', lines: [3] },
      { path: '/b', lines: [4] },
    ]);
  });

  it('splits a refused batch to commit every line before the refused one and name it', async () => {
    const { client, calls } = fakeClient({ type: 'bad', code: 'INVALID_INPUT' });
    const committed: number[] = [];
    const batcher = new Batcher(client, { committed: (_p, items) => void committed.push(...items.map((i) => i.line)) });
    const items = Array.from({ length: 10 }, (_, i) => item(i + 1, '/a', i === 6 ? 'bad' : 't'));
    const error = await run(batcher, items).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LineError);
    expect(error).toMatchObject({ line: 7, code: 'INVALID_INPUT', message: 'refused' });
    expect(committed).toEqual([1, 2, 3, 4, 5, 6]);
    expect(calls.length).toBeLessThan(10);
  });

  it('does not split on a failure that is not about the batch, and says nothing from its first line on went in', async () => {
    const { client, calls } = fakeClient({ type: 't', code: 'UNAVAILABLE' });
    const error = await run(new Batcher(client, { committed: () => undefined }), [item(4), item(5)]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ line: 4, code: 'UNAVAILABLE', message: 'events[0]: refused (nothing from line 4 on was appended)' });
    expect(calls).toHaveLength(1);
  });

  it('prepares each stream once, before its first batch', async () => {
    const { client } = fakeClient();
    const order: string[] = [];
    const batcher = new Batcher(client, {
      limits: { maxEvents: 1, maxBytes: 1000 },
      prepare: async (path) => void order.push(`prepare ${path}`),
      committed: (path, items) => void order.push(`${path} ${items[0]!.line}`),
    });
    await run(batcher, [item(1), item(2), item(3, '/b'), item(4)]);
    expect(order).toEqual(['prepare /a', '/a 1', '/a 2', 'prepare /b', '/b 3', '/a 4']);
  });
});
