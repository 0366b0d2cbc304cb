/**
 * End-to-end over real HTTP: concurrent appends (protocol §3.2, §4.1; one writer per stream,
 * architecture.md "The flow of one append"). Offsets stay dense and unique per stream whatever the
 * interleaving of requests.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommittedEvent } from '@rivulet/contract';
import type { Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer();
  api = server.api;
});

afterAll(async () => {
  await server?.close();
});

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Checks that `acked` are exactly the stored events and that the stream is dense from 1 to head. */
async function expectStoredExactly(path: string, acked: readonly CommittedEvent[], head: number): Promise<void> {
  const stored = await api.readAll(path);
  expect(stored.map((e) => e.offset)).toEqual(range(1, head));
  const byOffset = new Map(stored.map((e) => [e.offset, e]));
  const offsets = acked.map((e) => e.offset);
  expect(new Set(offsets).size).toBe(offsets.length);
  for (const event of acked) expect(byOffset.get(event.offset)).toEqual(event);
  const { core } = await api.state(path);
  expect(core).toMatchObject({ eventCount: head, maxOffset: head });
}

describe('concurrent appends', () => {
  it('many concurrent appends to one stream yield dense unique offsets', async () => {
    const path = '/conc/one';
    const results = await Promise.all(range(1, 200).map((n) => api.append(path, { type: 'c', payload: { n } })));
    const acked = results.flat();
    expect(acked).toHaveLength(200);
    expect(acked.map((e) => e.offset).sort((a, b) => a - b)).toEqual(range(2, 201));
    await expectStoredExactly(path, acked, 201);
    // Each request got the event it sent.
    results.forEach(([event], i) => expect(event!.payload).toEqual({ n: i + 1 }));
  });

  it('concurrent batches stay contiguous: each batch occupies consecutive offsets', async () => {
    const path = '/conc/batches';
    const results = await Promise.all(
      range(1, 60).map((b) => api.append(path, range(1, 1 + (b % 5)).map((i) => ({ type: 'b', payload: { b, i } })))),
    );
    let total = 0;
    for (const batch of results) {
      total += batch.length;
      const first = batch[0]!.offset;
      expect(batch.map((e) => e.offset)).toEqual(range(first, first + batch.length - 1));
    }
    await expectStoredExactly(path, results.flat(), total + 1);
  });

  it('concurrent idempotent appends of one key commit once', async () => {
    const path = '/conc/idem';
    const results = await Promise.all(
      range(1, 40).map(() => api.append(path, { type: 'once', payload: { v: 1 }, idempotencyKey: 'same' })),
    );
    const offsets = new Set(results.map(([e]) => e!.offset));
    expect([...offsets]).toEqual([2]);
    expect((await api.read(path)).streamMaxOffset).toBe(2);
  });

  it('appends to different streams interleave without affecting each other', async () => {
    const streams = range(1, 6).map((i) => `/conc/many/s${i}`);
    const requests: Promise<CommittedEvent[]>[] = [];
    for (let n = 1; n <= 40; n++) {
      for (const path of streams) requests.push(api.append(path, { type: 'm', payload: { path, n } }));
    }
    const acked = (await Promise.all(requests)).flat();
    for (const path of streams) {
      const mine = acked.filter((e) => e.path === path);
      expect(mine).toHaveLength(40);
      expect(mine.every((e) => (e.payload as { path: string }).path === path)).toBe(true);
      await expectStoredExactly(path, mine, 41);
    }
    const ids = await Promise.all(streams.map(async (p) => (await api.read(p, { limit: 1 })).streamId));
    expect(new Set(ids).size).toBe(streams.length);
  });
});
