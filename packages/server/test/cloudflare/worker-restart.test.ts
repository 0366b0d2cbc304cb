/**
 * The Worker host across restarts of the runtime (docs/cloudflare.md, alarms and restarts): Miniflare is
 * disposed and started again over the same persisted Durable Object storage and port, so every
 * object loses its memory as after an eviction or a deploy. What was acknowledged is still there,
 * a watching client reopens its connection where it left off, and owed deliveries resume by
 * themselves: the source stream is never touched after the restart, so only its stored alarm can
 * wake it (protocol §12.2, §12.7; docs/cloudflare.md §4.8).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommittedEvent } from '@rivulet/contract';
import { connect, watch } from '@rivulet/client';
import { HookServer } from '../helpers/hook-server.js';
import { EventType, configured, copyTo, eventually, waitForCopies } from '../helpers/subscriptions.js';
import { startWorkerHost, type WorkerTestHost } from '../helpers/worker-host.js';

let host: WorkerTestHost;
let hooks: HookServer;

beforeAll(async () => {
  host = await startWorkerHost({ retryBaseMs: 50, retryMaxMs: 200, maxDeliveryAttempts: 100_000, deliveryTimeoutMs: 1_000 });
  hooks = await HookServer.start();
}, 60_000);

afterAll(async () => {
  await hooks?.stop();
  await host?.close();
});

describe('restarting the Worker host over the same storage', () => {
  it('acknowledged appends, state, subscription progress and the listing survive', async () => {
    const appended = await host.api.append('/restart/log', [{ type: 'a', payload: { n: 1 } }, { type: 'b', idempotencyKey: 'k-b' }]);
    const before = await host.api.read('/restart/log');
    const stateBefore = await host.api.state('/restart/log');

    await host.restart();

    const after = await host.api.read('/restart/log');
    expect(after).toEqual(before);
    expect(await host.api.state('/restart/log')).toEqual(stateBefore);
    // The idempotency key still names the stored event, and offsets continue densely.
    expect(await host.api.append('/restart/log', { type: 'b', idempotencyKey: 'k-b' })).toEqual([appended[1]]);
    const [next] = await host.api.append('/restart/log', { type: 'c' });
    expect(next!.offset).toBe(before.streamMaxOffset + 1);
    const listed = await host.api.request<{ streams: { path: string; maxOffset: number }[] }>('GET', '/v1/streams?prefix=/restart');
    expect(listed.body.streams).toEqual([expect.objectContaining({ path: '/restart/log', maxOffset: next!.offset })]);
  });

  it('copies owed to a paused receiver are delivered after a restart, woken by the source object\'s stored alarm', async () => {
    const src = '/restart/copy/src';
    const dst = '/restart/copy/dst';
    await host.api.append(dst, { type: EventType.paused, payload: { reason: 'maintenance' } });
    await host.api.append(src, configured({ subscriptionKey: 'k', receiver: copyTo(dst) }));
    const sent = await host.api.append(src, [{ type: 'x', payload: { n: 1 } }, { type: 'x', payload: { n: 2 } }]);
    // The source backs off on the paused receiver (unavailable), with its alarm armed.
    await eventually(async () => {
      const runtime = (await host.api.state(src)).runtime?.subscriptions.k;
      return runtime && runtime.attempt >= 1 ? runtime : undefined;
    }, 'a failed attempt on the paused receiver');

    await host.restart();
    // Only the receiver is touched: it resumes; the source must wake on its own.
    await host.api.append(dst, { type: EventType.resumed, payload: {} });
    const copies = await waitForCopies(host.api, dst, 2, 10_000);
    expect(copies.map((c: CommittedEvent) => c.payload)).toEqual(sent.map((e) => e.payload));
  });

  it('a watched stream is watched on after a restart: the SDK reopens on its next session, with no event lost or repeated', async () => {
    const path = '/restart/watched';
    await host.api.append(path, { type: 'x', payload: { n: 0 } });
    const itx = await connect(host.url);
    const seen: number[] = [];
    const w = watch(itx, path, { replayAfterOffset: 0, filter: { eventTypes: ['x'] } }, (batch) => {
      for (const e of batch.events) seen.push(e.payload!.n as number);
    });
    try {
      await w.ready;
      await host.api.append(path, { type: 'x', payload: { n: 1 } });
      await eventually(() => seen.length === 2 || undefined, 'the live event before the restart');

      await host.restart();
      // Appended while the client reconnects: the reopened connection replays from its last offset.
      await host.api.append(path, [{ type: 'x', payload: { n: 2 } }, { type: 'x', payload: { n: 3 } }]);
      await eventually(() => seen.length === 4 || undefined, 'the events after the restart', 15_000);
      await host.api.append(path, { type: 'x', payload: { n: 4 } });
      await eventually(() => seen.length === 5 || undefined, 'a live event on the reopened connection');
      expect(seen).toEqual([0, 1, 2, 3, 4]);
      const connections = (await host.api.state(path)).runtime?.connections ?? {};
      expect(Object.keys(connections)).toEqual([w.connectionKey]);
    } finally {
      await w.close().catch(() => undefined);
      itx.close();
    }
  });

  it('a webhook delivery in flight when the runtime stops is sent again after its deadline (the stored watchdog and alarm)', async () => {
    let calls = 0;
    hooks.script = () => (++calls === 1 ? 'hang' : { status: 204 });
    const src = '/restart/hook';
    await host.api.append(
      src,
      configured({
        subscriptionKey: 'h',
        receiver: { action: 'webhook-post', url: hooks.url(), delivery: { start: 'now', onFailingEvent: 'halt' } },
      }),
    );
    const [event] = await host.api.append(src, { type: 'x', payload: { n: 1 } });
    await eventually(() => hooks.requests.length >= 1 || undefined, 'the first webhook request');

    await host.restart();
    // Nothing touches the source: the alarm stored with the in-flight deadline wakes it.
    await eventually(() => hooks.requests.length >= 2 || undefined, 'the webhook sent again after the restart', 10_000);
    expect(hooks.offsets()).toEqual([event!.offset, event!.offset]);
    const runtime = await eventually(async () => {
      const row = (await host.api.state(src)).runtime?.subscriptions.h;
      return row && row.acknowledgedOffset === event!.offset ? row : undefined;
    }, 'the delivery acknowledged');
    expect(runtime.lastError).toBeNull();
  });
});
