/**
 * End-to-end: the hosted processor protocol (protocol §20.3–20.5) against a processor host written
 * by hand in this process over a real RPC session (no SDK host): a report sent after
 * `processEventBatch` returned, through a `dup()` of `reportDeliveryResult`; a report naming a
 * checkpoint that did not grow; a fatal report; a wake answer beyond the head. On the Worker host
 * every call and report crosses the project's hub (docs/cloudflare.md §1.4).
 */
import { RpcTarget } from 'capnweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type ItxConnection, type ProcessorBatch, type ProcessorWakeRequest } from '@rivulet/client';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { EventType, configured, eventually } from '../helpers/subscriptions.js';

let server: TestServer;
let itx: ItxConnection;

beforeAll(async () => {
  server = await startTestServer({ retryBaseMs: 20, retryMaxMs: 50, maxDeliveryAttempts: 3, deliveryTimeoutMs: 2_000 });
  itx = await connect(server.url);
}, 60_000);

afterAll(async () => {
  itx?.close();
  await server?.close();
});

type Report = (result: unknown) => Promise<{ accepted: boolean; reason?: string }>;
type HeldReport = Report & { dup(): HeldReport; [Symbol.dispose](): void };

/** A processor host whose answers each test decides; it records what it was sent and what its reports got back. */
class Host extends RpcTarget {
  readonly wakes: ProcessorWakeRequest[] = [];
  readonly batches: { offsets: number[] }[] = [];
  readonly receipts: unknown[] = [];

  constructor(
    private readonly answerWake: (request: ProcessorWakeRequest) => { streamId: string; checkpointOffset: number },
    private readonly onBatch: (batch: ProcessorBatch, report: HeldReport) => void,
  ) {
    super();
  }

  wakeStreamProcessor(request: ProcessorWakeRequest) {
    this.wakes.push(request);
    return {
      ...this.answerWake(request),
      processEventBatch: (batch: ProcessorBatch) => {
        this.batches.push({ offsets: batch.events.map((e) => e.offset) });
        // Kept past this call: Cap'n Web disposes stubs passed in a call's parameters when it returns.
        this.onBatch(batch, (batch.reportDeliveryResult as unknown as HeldReport).dup());
      },
    };
  }
}

async function subscribeProcessor(path: string, name: string) {
  await server.api.append(
    path,
    configured({
      subscriptionKey: name,
      filter: { eventTypes: ['order'] },
      receiver: { action: 'processor-wake', expression: ['processors', ['get', name], 'wakeStreamProcessor'] },
    }),
  );
}

const rowOf = async (path: string, key: string) => (await server.api.state(path)).runtime?.subscriptions[key];

describe('the hosted processor protocol over RPC', () => {
  it('takes a report sent after processEventBatch returned, and refuses a second one for the same batch', async () => {
    const path = '/protocol/late';
    const host = new Host(
      (request) => ({ streamId: request.stream.streamId, checkpointOffset: 0 }),
      (batch, report) => {
        const offset = batch.events[0]!.offset;
        setTimeout(() => {
          void (async () => {
            host.receipts.push(await report({ outcome: 'ok', checkpointOffset: offset }));
            host.receipts.push(await report({ outcome: 'ok', checkpointOffset: offset }).catch((e: Error) => ({ error: e.message })));
            report[Symbol.dispose]();
          })();
        }, 50);
      },
    );
    const registration = await itx.root.processors.register('late', host);
    try {
      await subscribeProcessor(path, 'late');
      const orders = await server.api.append(path, [{ type: 'order' }, { type: 'note' }, { type: 'order' }]);
      const last = orders[2]!.offset;
      const row = await eventually(async () => {
        const r = await rowOf(path, 'late');
        return r?.acknowledgedOffset === last ? r : undefined;
      }, 'both orders acknowledged');
      expect(row).toMatchObject({ attempt: 0, lastError: null });
      expect(host.batches.map((b) => b.offsets)).toEqual([[orders[0]!.offset], [last]]);
      expect(host.wakes).toHaveLength(1);
      expect(host.wakes[0]).toMatchObject({ subscriptionKey: 'late', stream: { path, streamMaxOffset: expect.any(Number) } });
      await eventually(() => host.receipts.length === 4, 'every report answered');
      expect(host.receipts[0]).toEqual({ accepted: true });
      expect(host.receipts[2]).toEqual({ accepted: true });
      // The second report of a batch does not count.
      for (const second of [host.receipts[1], host.receipts[3]]) expect(second).toMatchObject({ accepted: false, reason: expect.stringMatching(/no longer in flight/) });
      expect((await server.api.state(path)).runtime?.connections.late).toMatchObject({ kind: 'hosted', batchesSent: 2, eventsSent: 2 });
    } finally {
      await registration.unregister();
    }
  });

  it('counts a checkpoint that did not grow as failing, and a fatal error halts at once', async () => {
    const path = '/protocol/failing';
    let fatal = false;
    const host = new Host(
      (request) => ({ streamId: request.stream.streamId, checkpointOffset: 0 }),
      (_batch, report) => {
        const result = fatal ? { outcome: 'error', error: { message: 'the ledger is corrupt', retryable: false } } : { outcome: 'ok', checkpointOffset: 0 };
        void report(result)
          .then((receipt) => host.receipts.push(receipt))
          .finally(() => report[Symbol.dispose]());
      },
    );
    const registration = await itx.root.processors.register('stuck', host);
    try {
      await subscribeProcessor(path, 'stuck');
      const [order] = await server.api.append(path, { type: 'order' });
      const row = await eventually(async () => {
        const r = await rowOf(path, 'stuck');
        return r?.lastError ? r : undefined;
      }, 'the failing report');
      expect(row.acknowledgedOffset).toBeLessThan(order!.offset);
      // The server records the failure before its answer to the report reaches the host.
      const receipt = await eventually(async () => host.receipts[0], 'the receipt of the report');
      expect(receipt).toMatchObject({ accepted: false });
      fatal = true;
      const halted = await eventually(
        async () => (await server.api.readAll(path)).find((e) => e.type === EventType.subscriptionDeliveryHalted),
        'the halt',
      );
      expect(JSON.stringify(halted.payload)).toMatch(/the ledger is corrupt/);
    } finally {
      await registration.unregister();
    }
  });

  it('refuses a wake answer whose checkpoint passes the head, naming it', async () => {
    const path = '/protocol/beyond';
    const host = new Host(
      (request) => ({ streamId: request.stream.streamId, checkpointOffset: request.stream.streamMaxOffset + 50 }),
      () => undefined,
    );
    const registration = await itx.root.processors.register('beyond', host);
    try {
      await subscribeProcessor(path, 'beyond');
      await server.api.append(path, { type: 'order' });
      const row = await eventually(async () => {
        const r = await rowOf(path, 'beyond');
        return r?.lastError ? r : undefined;
      }, 'the refused wake');
      expect(row.lastError).toMatch(/the processor answered the wake with checkpointOffset \d+, beyond this stream's head \d+/);
      expect(host.batches).toEqual([]);
      expect((await server.api.state(path)).runtime?.connections).toEqual({});
    } finally {
      await registration.unregister();
    }
  });
});
