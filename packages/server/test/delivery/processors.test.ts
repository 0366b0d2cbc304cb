/**
 * The processor-wake driver (engine/delivery/processor-driver.ts; protocol §20)
 * against a scripted host (fake-processor-host.ts): the wake and its validation, one matching event
 * per batch from the checkpoint (filter honoured, never ephemeral, never transformed), results
 * through reportDeliveryResult (the batch call itself is not awaited), the ladder for errors,
 * checkpoints that do not grow, timeouts and disconnects (unavailable, never a skip), halts, idle
 * teardown and re-wake, a host that registers again, a destroyed source, and a restart.
 */
import { EventType, type CommittedEvent, type ItxExpression, type SubscriptionConfiguredPayload } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { resumeSubscription } from '../../src/engine/commands.js';
import { createHarness, settle, waitFor, PROJECT, type Harness, type HarnessOptions } from './harness.js';
import { x } from './payloads.js';
import { FakeProcessorHost } from './fake-processor-host.js';

const EXPRESSION: ItxExpression = ['processors', ['get', 'h'], 'wakeStreamProcessor'];

function wakeSub(key: string, filter?: SubscriptionConfiguredPayload['filter']): SubscriptionConfiguredPayload {
  return { subscriptionKey: key, ...(filter ? { filter } : {}), receiver: { action: 'processor-wake', expression: EXPRESSION } };
}

let h: Harness;
let host: FakeProcessorHost;

async function setup(options: HarnessOptions = {}): Promise<void> {
  host = new FakeProcessorHost();
  h = await createHarness({ processorWaker: host, ...options, config: { processorIdleMs: 60_000, deliveryTimeoutMs: 2_000, ...options.config } });
}

afterEach(async () => {
  host?.breakAll();
  await h?.close();
});

const durable = (events: CommittedEvent[]) => events.filter((e) => e.ephemeral !== true).map((e) => e.offset);

describe('wake and batches', () => {
  it('wakes the host once, then sends one event per batch from its checkpoint, untransformed', async () => {
    await setup();
    await h.configure('/s', wakeSub('p'));
    await h.append('/s', x(1), x(2));
    await h.caughtUp('/s', 'p');

    expect(host.wakes).toHaveLength(1);
    const streamId = h.core('/s').streamId;
    expect(host.wakes[0]).toMatchObject({ projectId: PROJECT, expression: EXPRESSION });
    expect(host.wakes[0]!.request).toEqual({ stream: { projectId: PROJECT, path: '/s', streamId, streamMaxOffset: expect.any(Number) }, subscriptionKey: 'p' });
    expect(host.wakes[0]!.request.stream.streamMaxOffset).toBeGreaterThanOrEqual(2);
    expect(host.offsets).toEqual([1, 2, 3, 4]);
    expect(host.folded).toEqual([1, 2, 3, 4]);
    const stored = h.events('/s');
    for (const call of host.batches) {
      expect(call.batch.events).toHaveLength(1);
      expect(Object.keys(call.batch).sort()).toEqual(['events', 'path', 'projectId', 'reportDeliveryResult', 'streamId', 'streamMaxOffset', 'subscriptionKey']);
      expect(call.batch).toMatchObject({ projectId: PROJECT, path: '/s', streamId, subscriptionKey: 'p' });
      expect(call.batch.events[0]).toEqual(stored.find((e) => e.offset === call.offset));
      expect(call.receipts).toEqual([{ accepted: true }]);
    }
    expect(h.sub('/s', 'p')).toMatchObject({ acknowledgedOffset: 4, lag: 0, attempt: 0, lastError: null, inFlightDeadlineAt: null });
    expect(h.runtime('/s').connections.p).toMatchObject({ kind: 'hosted', deliveredThroughOffset: 4, lag: 0, batchesSent: 4, eventsSent: 4 });
  });

  it('starts after the checkpoint the host answers, and follows it down when the host lost its state', async () => {
    await setup();
    await h.append('/s', x(1));
    host.streamId = h.core('/s').streamId;
    host.checkpoint = 2;
    await h.configure('/s', wakeSub('p'));
    await h.append('/s', x(2));
    await h.caughtUp('/s', 'p');
    expect(host.offsets).toEqual([3, 4]);

    // The host forgets everything and its session ends: the next wake answers checkpoint 0.
    host.breakAll();
    await waitFor(() => Object.keys(h.runtime('/s').connections).length === 0, 'connection gone');
    host.checkpoint = 0;
    host.folded = [];
    await h.append('/s', x(3));
    await h.caughtUp('/s', 'p');
    expect(host.wakes).toHaveLength(2);
    expect(host.folded).toEqual([1, 2, 3, 4, 5]);
  });

  it('honours the filter, never delivers ephemeral events, and wakes nobody for events that do not match', async () => {
    await setup();
    await h.configure('/s', wakeSub('p', { eventTypes: ['app/x'], jsonataCondition: 'payload.n > 1' }));
    await h.append('/s', { type: 'app/y' }, x(1));
    await waitFor(() => h.sub('/s', 'p').acknowledgedOffset === h.head('/s'), 'cursor past non-matching events');
    expect(host.wakes).toEqual([]);

    await h.append('/s', x(2), x(3, { ephemeral: true }), { type: 'app/y' }, x(4));
    await h.caughtUp('/s', 'p');
    const events = h.actor('/s').read({ afterOffset: 0, limit: 500, includeEphemeral: true }).events;
    const offset = (n: number, ephemeral = false) => events.find((e) => e.type === 'app/x' && e.payload?.n === n && (e.ephemeral === true) === ephemeral)!.offset;
    expect(host.offsets).toEqual([offset(2), offset(4)]);
    expect(host.offsets).not.toContain(events.find((e) => e.ephemeral === true)!.offset);
    expect(h.sub('/s', 'p').acknowledgedOffset).toBe(h.head('/s'));
  });

  it('folds a long backlog one event per batch, in order, across read-ahead pages and non-matching events', async () => {
    await setup();
    const inputs = Array.from({ length: 300 }, (_, i) => (i % 3 === 2 ? { type: 'app/y' } : x(i)));
    await h.append('/s', ...inputs);
    await h.configure('/s', wakeSub('p', { eventTypes: ['app/x'] }));
    await h.caughtUp('/s', 'p', 10_000);
    const expected = h.eventsOfType('/s', 'app/x').map((e) => e.offset);
    expect(expected).toHaveLength(200);
    expect(host.offsets).toEqual(expected);
    expect(host.folded).toEqual(expected);
    expect(host.batches.every((b) => b.batch.events.length === 1)).toBe(true);
    expect(h.sub('/s', 'p').acknowledgedOffset).toBe(h.head('/s'));
  });

  it('a condition that throws: the events before it are folded one by one, then it fails in order with one audit, never passed', async () => {
    await setup({ config: { maxDeliveryAttempts: 3 } });
    await h.configure('/s', wakeSub('p', { eventTypes: ['app/x'], jsonataCondition: '$number(payload.s) > 0' }));
    const s = (v: string) => ({ type: 'app/x', payload: { s: v } });
    await h.append('/s', s('1'), s('2'), s('bad'), s('3'));
    const halt = await h.halted('/s', 'p');
    expect(host.offsets).toEqual([3, 4]);
    expect(host.folded).toEqual([3, 4]);
    expect(halt).toMatchObject({ afterOffset: 4, attempts: 3 });
    expect(halt.error).toContain('filter.jsonataCondition threw on offset 5');
    expect(h.eventsOfType('/s', EventType.errorOccurred)).toHaveLength(1);
  });

  it('does not await the batch call: a processor may append to its own stream while folding', async () => {
    await setup();
    await h.configure('/s', wakeSub('p', { eventTypes: ['app/x'] }));
    host.during = async (call) => {
      await h.append('/s', { type: 'app/derived', payload: { from: call.offset } });
    };
    await h.append('/s', x(1), x(2));
    await h.caughtUp('/s', 'p');
    expect(host.offsets).toEqual([3, 4]);
    expect(h.eventsOfType('/s', 'app/derived').map((e) => e.payload)).toEqual([{ from: 3 }, { from: 4 }]);
  });
});

describe('wake validation', () => {
  it.each([
    ['another lifetime', { answer: { streamId: 'not-this-one' } }, 'streamId "not-this-one", but this stream\'s lifetime is'],
    ['a checkpoint beyond the head', { answer: { checkpointOffset: 99 } }, 'checkpointOffset 99, beyond this stream\'s head 2'],
    ['a negative checkpoint', { answer: { checkpointOffset: -1 } }, 'checkpointOffset -1, which is not a non-negative integer'],
    ['a fractional checkpoint', { answer: { checkpointOffset: 1.5 } }, 'checkpointOffset 1.5, which is not a non-negative integer'],
    ['a checkpoint that is a string', { answer: { checkpointOffset: '1' } }, 'checkpointOffset "1", which is not a non-negative integer'],
    ['no callable', { answer: {}, callable: false }, 'without a processEventBatch function'],
    ['something that is not an object', { answer: null }, 'not {streamId, checkpointOffset, processEventBatch}'],
  ] as const)('refuses %s: a failing delivery that halts at the limit, and the callable is released', async (_name, action, message) => {
    await setup({ config: { maxDeliveryAttempts: 2 } });
    host.wakeScript = () => ({ ...action }) as never;
    await h.configure('/s', wakeSub('p'));
    const halt = await h.halted('/s', 'p');
    expect(halt.attempts).toBe(2);
    expect(halt.afterOffset).toBe(0);
    expect(halt.error).toContain(message);
    expect(host.wakes).toHaveLength(2);
    expect(host.batches).toEqual([]);
    for (const wake of host.wakes) if (wake.callable) expect(wake.callable.closed).toBe(true);
    expect(h.runtime('/s').connections).toEqual({});
  });

  it('a host that is not connected is unavailable: backoff, no skip, and a halt only at the limit', async () => {
    await setup({ config: { maxDeliveryAttempts: 3 } });
    host.wakeScript = () => ({ ok: false, kind: 'unavailable', error: 'no processor "h" is connected in this project' });
    await h.configure('/s', wakeSub('p'));
    await h.append('/s', x(1));
    const halt = await h.halted('/s', 'p');
    expect(halt).toMatchObject({ afterOffset: 0, attempts: 3, error: 'no processor "h" is connected in this project' });
    expect(host.wakes).toHaveLength(3);
    expect(h.eventsOfType('/s', EventType.errorOccurred)).toEqual([]);
  });

  it('a wake that fails with retryable: false halts at once; a wake that hangs times out as unavailable', async () => {
    await setup({ config: { maxDeliveryAttempts: 5, deliveryTimeoutMs: 100 } });
    host.wakeScript = () => ({ ok: false, kind: 'fatal', error: 'bad processor' });
    await h.configure('/s', wakeSub('p'));
    expect(await h.halted('/s', 'p')).toMatchObject({ attempts: 1, error: 'bad processor' });

    host.wakeScript = (_r, i) => (i === 1 ? 'hang' : 'answer');
    await resumeSubscription(h.actor('/s'), { subscriptionKey: 'p' });
    await waitFor(() => h.sub('/s', 'p').lastError?.includes('did not answer the wake within 100 ms'), 'wake timeout');
    await h.caughtUp('/s', 'p');
    expect(host.wakes).toHaveLength(3);
  });
});

describe('results and the ladder', () => {
  it('only a checkpoint that grew is progress: an "ok" that does not grow counts as a failing attempt', async () => {
    await setup({ config: { maxDeliveryAttempts: 4 } });
    await h.configure('/s', wakeSub('p', { eventTypes: ['app/x'] }));
    host.batchScript = (_call, i) => (i < 2 ? { report: { outcome: 'ok', checkpointOffset: 0 } } : 'fold');
    await h.append('/s', x(1));
    await waitFor(() => h.sub('/s', 'p').attempt === 2 && h.sub('/s', 'p').lastError, 'two attempts');
    expect(h.sub('/s', 'p').lastError).toContain('its checkpoint did not grow (it was 0), which is not progress');
    expect(host.batches[0]!.receipts[0]).toMatchObject({ accepted: false });
    await h.caughtUp('/s', 'p');
    expect(host.offsets).toEqual([3, 3, 3]);
    expect(h.sub('/s', 'p')).toMatchObject({ attempt: 0, lastError: null, acknowledgedOffset: 3 });
    expect(host.wakes).toHaveLength(1);
  });

  it('a checkpoint that never grows halts at the limit; so does one below the event or beyond the head', async () => {
    await setup({ config: { maxDeliveryAttempts: 3 } });
    await h.configure('/s', wakeSub('p', { eventTypes: ['app/x'] }));
    host.batchScript = (_call, i) => ({ report: { outcome: 'ok', checkpointOffset: [0, 99, 'x'][i % 3] } });
    await h.append('/s', x(1));
    const halt = await h.halted('/s', 'p');
    // The cursor is the processor's checkpoint (0): offsets 1–2 do not match, but it never passed them.
    expect(halt).toMatchObject({ afterOffset: 0, attempts: 3 });
    expect(halt.error).toContain('neither {outcome: "ok", checkpointOffset}');
    expect(host.batches.map((b) => b.receipts[0]?.reason)).toEqual([
      expect.stringContaining('did not grow'),
      expect.stringContaining('beyond this stream\'s head'),
      expect.stringContaining('neither'),
    ]);
  });

  it('an error report is a failing attempt retried on the same connection; retryable: false halts at once and closes it', async () => {
    await setup({ config: { maxDeliveryAttempts: 5 } });
    await h.configure('/s', wakeSub('p', { eventTypes: ['app/x'] }));
    host.batchScript = (_call, i) => (i === 0 ? { report: { outcome: 'error', error: { message: 'boom' } } } : 'fold');
    await h.append('/s', x(1));
    await h.caughtUp('/s', 'p');
    expect(host.offsets).toEqual([3, 3]);
    expect(host.wakes).toHaveLength(1);

    host.batchScript = () => ({ report: { outcome: 'error', error: { message: 'cannot fold this', retryable: false } } });
    await h.append('/s', x(2));
    const halt = await h.halted('/s', 'p');
    expect(halt).toEqual({ reason: 'delivery-failed', afterOffset: 3, attempts: 1, error: 'the processor failed on offset 4: cannot fold this' });
    expect(h.eventsOfType('/s', EventType.subscriptionDeliveryHalted)).toHaveLength(1);
    await waitFor(() => Object.keys(h.runtime('/s').connections).length === 0, 'connection closed by the halt');
    expect(host.wakes[0]!.callable!.closed).toBe(true);

    // Resuming wakes the host again, from its checkpoint.
    host.batchScript = () => 'fold';
    await resumeSubscription(h.actor('/s'), { subscriptionKey: 'p' });
    await h.caughtUp('/s', 'p');
    expect(host.wakes).toHaveLength(2);
    expect(host.folded).toEqual([3, 4]);
  });

  it('a batch call that throws is a failing attempt; a session that broke during it is unavailable', async () => {
    await setup({ config: { maxDeliveryAttempts: 5 } });
    await h.configure('/s', wakeSub('p', { eventTypes: ['app/x'] }));
    host.batchScript = (_call, i) =>
      i === 0 ? { fail: { kind: 'failing', error: 'processEventBatch threw' } } : i === 1 ? { fail: { kind: 'unavailable', error: 'RPC session failed' } } : 'fold';
    await h.append('/s', x(1));
    await h.caughtUp('/s', 'p');
    expect(host.offsets).toEqual([3, 3, 3]);
    // The failing call kept the connection; the unavailable one dropped it: a second wake.
    expect(host.wakes).toHaveLength(2);
  });

  it('no report within the delivery timeout is unavailable: the connection is dropped, the host woken again, and the late report refused', async () => {
    await setup({ config: { maxDeliveryAttempts: 3, deliveryTimeoutMs: 60 } });
    await h.configure('/s', wakeSub('p', { eventTypes: ['app/x'] }));
    host.batchScript = (_call, i) => (i === 0 ? 'hang' : 'fold');
    await h.append('/s', x(1));
    await waitFor(() => h.sub('/s', 'p').lastError?.includes('did not report a result within 60 ms'), 'the timeout');
    await h.caughtUp('/s', 'p');
    expect(host.wakes).toHaveLength(2);
    expect(host.wakes[0]!.callable!.closed).toBe(true);
    expect(host.offsets).toEqual([3, 3]);
    expect(host.batches[0]!.report({ outcome: 'ok', checkpointOffset: 3 })).toMatchObject({ accepted: false });
    expect(h.sub('/s', 'p')).toMatchObject({ acknowledgedOffset: 3, attempt: 0 });
  });

  it('a disconnect during a batch is unavailable and never skips; timeouts and disconnects halt only at the limit', async () => {
    await setup({ config: { maxDeliveryAttempts: 4 } });
    await h.configure('/s', wakeSub('p', { eventTypes: ['app/x'] }));
    host.batchScript = () => 'break';
    await h.append('/s', x(1), x(2));
    const halt = await h.halted('/s', 'p');
    expect(halt).toMatchObject({ afterOffset: 0, attempts: 4 });
    expect(halt.error).toContain('the processor host disconnected');
    expect(host.offsets).toEqual([3, 3, 3, 3]);
    expect(host.wakes).toHaveLength(4);
    expect(h.eventsOfType('/s', EventType.errorOccurred)).toEqual([]);
  });
});

describe('connections', () => {
  it('closes a caught-up connection after the idle period and wakes it again from its checkpoint on the next matching event', async () => {
    await setup({ config: { processorIdleMs: 40 } });
    await h.configure('/s', wakeSub('p', { eventTypes: ['app/x'] }));
    await h.append('/s', x(1));
    await h.caughtUp('/s', 'p');
    expect(h.runtime('/s').connections.p?.kind).toBe('hosted');
    await waitFor(() => host.wakes[0]!.callable!.closed, 'idle teardown');
    expect(h.runtime('/s').connections).toEqual({});
    expect(h.alarms.armed).toEqual([]);

    // Non-matching events do not wake it.
    await h.append('/s', { type: 'app/y' });
    await waitFor(() => h.sub('/s', 'p').acknowledgedOffset === h.head('/s'), 'cursor past app/y');
    expect(host.wakes).toHaveLength(1);

    await h.append('/s', x(2));
    await h.caughtUp('/s', 'p');
    expect(host.wakes).toHaveLength(2);
    expect(host.wakes[1]!.request.stream.streamMaxOffset).toBe(5);
    expect(host.offsets).toEqual([3, 5]);
    expect(host.folded).toEqual([3, 5]);
  });

  it('a host that registers again is woken without waiting out its backoff', async () => {
    await setup({ config: { retryBaseMs: 60_000, retryMaxMs: 60_000, maxDeliveryAttempts: 10 } });
    let connected = false;
    host.wakeScript = () => (connected ? 'answer' : { ok: false, kind: 'unavailable', error: 'no processor "h" is connected in this project' });
    await h.configure('/s', wakeSub('p', { eventTypes: ['app/x'] }));
    await h.append('/s', x(1));
    await waitFor(() => h.sub('/s', 'p').nextAttemptAt !== null, 'backing off');
    expect(h.sub('/s', 'p').lastError).toBe('no processor "h" is connected in this project');
    expect(host.wakes).toHaveLength(1);

    connected = true;
    h.delivery!.processorHostRegistered('another-project');
    await settle();
    expect(host.wakes).toHaveLength(1);
    h.delivery!.processorHostRegistered(PROJECT);
    await h.caughtUp('/s', 'p');
    expect(host.wakes).toHaveLength(2);
    expect(host.folded).toEqual([3]);
  });

  it('a destroyed source ends the connection; the recreated one is woken with its new lifetime and the host starts over', async () => {
    await setup();
    await h.configure('/s', wakeSub('p', { eventTypes: ['app/x'] }));
    await h.append('/s', x(1), x(2));
    await h.caughtUp('/s', 'p');
    const first = h.core('/s').streamId;
    await h.actor('/s').destroy();
    await waitFor(() => host.wakes[0]!.callable!.closed, 'connection closed by destroy');

    await h.configure('/s', wakeSub('p', { eventTypes: ['app/x'] }));
    await h.append('/s', x(7));
    await h.caughtUp('/s', 'p');
    const second = h.core('/s').streamId;
    expect(second).not.toBe(first);
    expect(host.wakes[1]!.request.stream.streamId).toBe(second);
    expect(host.folded).toEqual([3]);
  });

  it('a batch in flight when the server stopped is sent again after a restart, from the host\'s checkpoint', async () => {
    const first = new FakeProcessorHost();
    first.batchScript = () => 'hang';
    h = await createHarness({ processorWaker: first, config: { deliveryTimeoutMs: 5000, processorIdleMs: 60_000 } });
    host = first;
    await h.configure('/s', wakeSub('p', { eventTypes: ['app/x'] }));
    await h.append('/s', x(1));
    await waitFor(() => first.batches[0], 'the batch');
    expect(h.sub('/s', 'p').inFlightDeadlineAt).not.toBeNull();
    const storage = h.storage;
    await h.close({ keepStorage: true });

    host = new FakeProcessorHost();
    host.streamId = first.streamId;
    h = await createHarness({ storage, processorWaker: host, config: { processorIdleMs: 60_000 } });
    h.start();
    await h.caughtUp('/s', 'p');
    expect(host.wakes).toHaveLength(1);
    expect(host.folded).toEqual([3]);
    expect(durable(h.events('/s'))).toEqual([1, 2, 3]);
  });
});
