/**
 * The SDK's processor host (@rivulet/client/processor-host; protocol §20.7).
 *
 * Directly (no RPC): a wake answers the stored checkpoint (0 and the initial state for a lifetime
 * it has not seen), each event is folded and its state and checkpoint committed together before
 * the report, a failure commits nothing, an event at or below the checkpoint is acknowledged
 * without folding (dedupe by (streamId, offset)), another lifetime starts over, a new host on the
 * same file resumes exactly, and the processor is picked by slug, key or expression.
 *
 * Over RPC against a real server: serveProcessors registers, a processor-wake subscription wakes
 * it, it folds the durable events (not the ephemeral ones), onEvent appends elsewhere, and its
 * state equals the fold of the stream.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connect, createClient, defineProcessor, WorkerError, type CommittedEvent, type ItxConnection, type ProcessorBatch, type ProcessorDeliveryResult } from '@rivulet/client';
import { ProcessorHost, serveProcessors, type ServedProcessors } from '@rivulet/client/processor-host';
import { EventType } from '@rivulet/contract';
import { startTestServer, type TestServer } from './harness.js';

interface Tally {
  count: number;
  total: number;
  offsets: number[];
}

let reduced = 0;
const tally = defineProcessor<Tally>({
  slug: 'tally',
  initialState: { count: 0, total: 0, offsets: [] },
  reduce(state, event) {
    reduced++;
    state.count += 1;
    state.total += typeof event.payload?.amount === 'number' ? event.payload.amount : 0;
    state.offsets.push(event.offset);
    return state;
  },
});

let dir: string;
const hosts: ProcessorHost[] = [];
function newHost(...args: ConstructorParameters<typeof ProcessorHost>): ProcessorHost {
  const host = new ProcessorHost(...args);
  hosts.push(host);
  return host;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rivulet-processor-host-'));
  reduced = 0;
});

afterEach(() => {
  for (const host of hosts.splice(0)) host.close();
  rmSync(dir, { recursive: true, force: true });
});

const STREAM = 'stream-1';
const request = (streamId = STREAM, subscriptionKey = 'tally', extra: Record<string, unknown> = {}) => ({
  stream: { projectId: null, path: '/orders', streamId, streamMaxOffset: 10 },
  subscriptionKey,
  ...extra,
});

function event(offset: number, amount = 1): CommittedEvent {
  return { path: '/orders', offset, createdAt: '2026-11-30T10:00:00.000Z', type: 'order', payload: { amount } } as CommittedEvent;
}

/** Sends one batch to a woken processor; answers the report. */
async function batchOf(processEventBatch: (batch: ProcessorBatch) => Promise<void>, e: CommittedEvent, streamId = STREAM, subscriptionKey = 'tally') {
  const reports: ProcessorDeliveryResult[] = [];
  await processEventBatch({
    projectId: null,
    path: '/orders',
    streamId,
    subscriptionKey,
    events: [e],
    streamMaxOffset: e.offset,
    reportDeliveryResult: (result) => {
      reports.push(result);
      return { accepted: true };
    },
  });
  expect(reports).toHaveLength(1);
  return reports[0]!;
}

function rawRows(dbPath: string) {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.prepare('SELECT path, subscription_key, slug, stream_id, checkpoint, state FROM processor_state').all();
  } finally {
    db.close();
  }
}

describe('the host, directly', () => {
  it('wakes at checkpoint 0 with the initial state, folds, and commits state and checkpoint together before reporting', async () => {
    const dbPath = join(dir, 'host.db');
    const seenAtCommit: unknown[] = [];
    const host = newHost([tally], { dbPath, onCommitted: () => void seenAtCommit.push(rawRows(dbPath)) });
    const answer = await host.wake(request());
    expect(answer).toMatchObject({ streamId: STREAM, checkpointOffset: 0 });
    expect(host.read({ path: '/orders', subscriptionKey: 'tally' })).toMatchObject({ checkpoint: 0, state: { count: 0, total: 0, offsets: [] } });

    expect(await batchOf(answer.processEventBatch, event(3, 5))).toEqual({ outcome: 'ok', checkpointOffset: 3 });
    expect(await batchOf(answer.processEventBatch, event(4, 7))).toEqual({ outcome: 'ok', checkpointOffset: 4 });
    // What another connection to the file saw when the commit was done (before the report): both.
    expect(seenAtCommit).toEqual([
      [{ path: '/orders', subscription_key: 'tally', slug: 'tally', stream_id: STREAM, checkpoint: 3, state: '{"count":1,"total":5,"offsets":[3]}' }],
      [{ path: '/orders', subscription_key: 'tally', slug: 'tally', stream_id: STREAM, checkpoint: 4, state: '{"count":2,"total":12,"offsets":[3,4]}' }],
    ]);
  });

  it('a failure commits nothing: a throwing onEvent or a state that is not JSON reports an error and keeps the checkpoint', async () => {
    const dbPath = join(dir, 'host.db');
    const picky = defineProcessor<Tally>({
      ...tally,
      slug: 'picky',
      reduce: (state, e) => (e.payload?.amount === -1 ? (undefined as unknown as Tally) : tally.reduce(state, e)),
      onEvent({ event: e }) {
        if (e.payload?.amount === 13) throw new Error('unlucky');
        if (e.payload?.amount === 99) throw new WorkerError('never', { retryable: false });
      },
    });
    const host = newHost([picky], { dbPath });
    const { processEventBatch } = await host.wake(request(STREAM, 'picky'));
    await batchOf(processEventBatch, event(2, 1), STREAM, 'picky');
    expect(await batchOf(processEventBatch, event(3, 13), STREAM, 'picky')).toEqual({ outcome: 'error', error: { message: 'unlucky' } });
    expect(await batchOf(processEventBatch, event(3, 99), STREAM, 'picky')).toEqual({ outcome: 'error', error: { message: 'never', retryable: false } });
    expect(await batchOf(processEventBatch, event(3, -1), STREAM, 'picky')).toMatchObject({ outcome: 'error', error: { retryable: false } });
    expect(rawRows(dbPath)).toEqual([expect.objectContaining({ checkpoint: 2, state: '{"count":1,"total":1,"offsets":[2]}' })]);
    expect(await batchOf(processEventBatch, event(3, 4), STREAM, 'picky')).toEqual({ outcome: 'ok', checkpointOffset: 3 });
  });

  it('acknowledges an event at or below its checkpoint without folding it (dedupe by streamId and offset)', async () => {
    const host = newHost([tally], { dbPath: join(dir, 'host.db') });
    const { processEventBatch } = await host.wake(request());
    for (const offset of [2, 3, 4]) await batchOf(processEventBatch, event(offset));
    expect(reduced).toBe(3);
    expect(await batchOf(processEventBatch, event(3))).toEqual({ outcome: 'ok', checkpointOffset: 4 });
    expect(await batchOf(processEventBatch, event(4))).toEqual({ outcome: 'ok', checkpointOffset: 4 });
    expect(reduced).toBe(3);
    expect(host.read<Tally>({ path: '/orders', subscriptionKey: 'tally' })?.state.offsets).toEqual([2, 3, 4]);
  });

  it('starts over from the initial state for another lifetime of the stream, and refuses a batch of the old one', async () => {
    const dbPath = join(dir, 'host.db');
    const host = newHost([tally], { dbPath });
    const old = await host.wake(request('old-life'));
    await batchOf(old.processEventBatch, event(2, 10), 'old-life');
    const fresh = await host.wake(request('new-life'));
    expect(fresh).toMatchObject({ streamId: 'new-life', checkpointOffset: 0 });
    expect(host.read({ path: '/orders', subscriptionKey: 'tally' })).toMatchObject({ streamId: 'new-life', checkpoint: 0, state: { count: 0, total: 0, offsets: [] } });
    expect(await batchOf(old.processEventBatch, event(3, 10), 'old-life')).toMatchObject({ outcome: 'error' });
    expect(await batchOf(fresh.processEventBatch, event(2, 1), 'new-life')).toEqual({ outcome: 'ok', checkpointOffset: 2 });
    expect(rawRows(dbPath)).toEqual([expect.objectContaining({ stream_id: 'new-life', checkpoint: 2, state: '{"count":1,"total":1,"offsets":[2]}' })]);
  });

  it('a new host on the same file resumes exactly from the stored checkpoint and state', async () => {
    const dbPath = join(dir, 'host.db');
    const first = newHost([tally], { dbPath });
    const a = await first.wake(request());
    await batchOf(a.processEventBatch, event(2, 3));
    await batchOf(a.processEventBatch, event(5, 4));
    first.close();

    const second = newHost([tally], { dbPath });
    const b = await second.wake(request());
    expect(b.checkpointOffset).toBe(5);
    await batchOf(b.processEventBatch, event(5, 4));
    await batchOf(b.processEventBatch, event(6, 1));
    expect(second.read({ path: '/orders', subscriptionKey: 'tally' })).toMatchObject({ checkpoint: 6, state: { count: 3, total: 8, offsets: [2, 5, 6] } });
  });

  it('picks the processor by processorSlug, by the subscription key, or as the only one; keeps each subscription apart', async () => {
    const other = defineProcessor({ slug: 'other', initialState: 0, reduce: (n: number) => n + 1 });
    const host = newHost([tally, other], { dbPath: join(dir, 'host.db') });
    const bySlug = await host.wake(request(STREAM, 'anything', { processorSlug: 'other' }));
    await batchOf(bySlug.processEventBatch, event(2), STREAM, 'anything');
    const byKey = await host.wake(request(STREAM, 'shop#tally'));
    await batchOf(byKey.processEventBatch, event(2, 9), STREAM, 'shop#tally');
    expect(host.read({ path: '/orders', subscriptionKey: 'anything', slug: 'other' })).toMatchObject({ state: 1 });
    expect(host.read({ path: '/orders', subscriptionKey: 'shop#tally' })).toMatchObject({ slug: 'tally', state: { total: 9 } });
    await expect(host.wake(request(STREAM, 'unclear'))).rejects.toMatchObject({ retryable: false });
    await expect(host.wake(request(STREAM, 'x', { processorSlug: 'missing' }))).rejects.toMatchObject({ retryable: false });
    expect(() => defineProcessor({ slug: 'has space', initialState: 0, reduce: (n: number) => n })).toThrow(/slug/);
    expect(() => new ProcessorHost([tally, tally], { dbPath: join(dir, 'x.db') })).toThrow(/share the slug/);
  });
});

describe('over RPC, against a server', () => {
  let t: TestServer;
  let itx: ItxConnection;
  let served: ServedProcessors | undefined;

  beforeEach(async () => {
    t = await startTestServer({ retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 30, deliveryTimeoutMs: 2_000, processorIdleMs: 60_000 });
    itx = await connect(t.url, { reconnect: { initialDelayMs: 20, maxDelayMs: 100 } });
  });

  afterEach(async () => {
    await served?.stop();
    served = undefined;
    itx.close();
    await t.dispose();
  });

  async function eventually<T>(read: () => Promise<T> | T, ok: (value: T) => boolean, what: string, timeoutMs = 5_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (ok(value)) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  it('is woken, folds the durable events (not the ephemeral ones), and onEvent appends elsewhere', async () => {
    const client = createClient({ url: t.url });
    const withSideEffect = defineProcessor<Tally>({
      ...tally,
      async onEvent({ event: e, state, stream, itx: root }) {
        await root.streams.get('/totals').append({
          type: 'total-changed',
          payload: { total: state.total },
          idempotencyKey: `tally:${stream.streamId}:${e.offset}`,
        });
      },
    });
    served = serveProcessors(itx, 'shop', [withSideEffect], { dbPath: join(dir, 'shop.db') });
    await served.ready;
    await client.append('/orders', {
      type: EventType.subscriptionConfigured,
      payload: { subscriptionKey: 'tally', filter: { eventTypes: ['order'] }, receiver: { action: 'processor-wake', expression: ['processors', ['get', 'shop'], 'wakeStreamProcessor'] } },
    });
    await client.append('/orders', [
      { type: 'order', payload: { amount: 5 } },
      { type: 'order', payload: { amount: 100 }, ephemeral: true },
      { type: 'note' },
      { type: 'order', payload: { amount: 7 } },
    ]);
    const record = await eventually(() => served!.host.read<Tally>({ path: '/orders', subscriptionKey: 'tally' }), (r) => r?.checkpoint === 6, 'the fold');
    const durable = (await client.getEvents('/orders')).events.filter((e) => e.type === 'order');
    expect(record!.state).toEqual({ count: 2, total: 12, offsets: durable.map((e) => e.offset) });
    const totals = await eventually(() => client.getEvents('/totals'), (r) => r.events.length === 3, '/totals');
    expect(totals.events.slice(1).map((e) => e.payload)).toEqual([{ total: 5 }, { total: 12 }]);
    const state = await client.state('/orders');
    expect(state.runtime?.connections.tally).toMatchObject({ kind: 'hosted', deliveredThroughOffset: 6, batchesSent: 2, eventsSent: 2 });
    expect(state.runtime?.subscriptions.tally).toMatchObject({ acknowledgedOffset: 6, attempt: 0, lastError: null });
  });

  it('an expression may name the processor: ["processor", slug]', async () => {
    const client = createClient({ url: t.url });
    const other = defineProcessor({ slug: 'other', initialState: 0, reduce: (n: number) => n + 1 });
    served = serveProcessors(itx, 'shop', [tally, other], { dbPath: join(dir, 'shop.db') });
    await served.ready;
    await client.append('/orders', {
      type: EventType.subscriptionConfigured,
      payload: {
        subscriptionKey: 'counting',
        filter: { eventTypes: ['order'] },
        receiver: { action: 'processor-wake', expression: ['processors', ['get', 'shop'], ['processor', 'other'], 'wakeStreamProcessor'] },
      },
    });
    await client.append('/orders', [{ type: 'order' }, { type: 'order' }]);
    await eventually(() => served!.host.read({ path: '/orders', subscriptionKey: 'counting', slug: 'other' }), (r) => r?.checkpoint === 4, 'the fold');
    expect(served.host.read({ path: '/orders', subscriptionKey: 'counting', slug: 'other' })?.state).toBe(2);
    expect(served.host.records()).toHaveLength(1);
  });
});
