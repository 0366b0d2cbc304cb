/**
 * What a loaded stream costs in memory, and that a swept one costs nothing (architecture.md,
 * "Actors come and go; delivery does not"; docs/performance.md "Per-stream state made on first
 * use"). Heap figures are taken after V8's full collection (hosts/node/heap-release.ts).
 */
import { getHeapStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../adapters/memory/memory-storage.js';
import { fullCollection } from '../hosts/node/heap-release.js';
import type { AlarmFactory, Timer } from '../ports/timer.js';
import type { StreamActor } from './actor.js';
import { composeEngine, localDirectory, type Engine } from './compose.js';
import { defaultEngineConfig } from './config.js';
import { createServerMetrics } from './metrics.js';
import { copyReceiver } from './receivers/copy.js';
import { openSchema } from './schema.js';

/** Timers and alarms that fire only when the test says so. */
class ManualTimers implements Timer, AlarmFactory {
  private due: Array<{ fn: () => void; cancelled: boolean }> = [];
  set(_delayMs: number, fn: () => void) {
    const t = { fn, cancelled: false };
    this.due.push(t);
    return () => {
      t.cancelled = true;
    };
  }
  create() {
    return { set: () => undefined, clear: () => undefined };
  }
  /** Fires what is due now (and not what those set). */
  fire(): void {
    const due = this.due.filter((t) => !t.cancelled);
    this.due = [];
    for (const t of due) t.fn();
  }
}

async function engineWith(timers: ManualTimers): Promise<Engine> {
  const storage = await MemoryStorage.create();
  openSchema(storage);
  let n = 0;
  const engine: Engine = composeEngine({
    storage,
    alarms: timers,
    timer: timers,
    clock: { now: () => Date.parse('2030-01-01T00:00:00.000Z') },
    random: { next: () => 0.5, uuid: () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}` },
    config: defaultEngineConfig,
    metrics: createServerMetrics(),
    logger: { error: () => undefined },
    receivers: { 'copy-to-stream': copyReceiver(localDirectory(() => engine.registry)) },
    actorIdleSweepMs: 1000,
  });
  return engine;
}

/** The bench's streams: each a source with one copy subscription to a stream that never exists. */
async function sources(engine: Engine, from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i++) {
    await engine.service.subscribeToEventsFrom(null, `/dst-${i}`, { sourceStreamPath: `/src-${i}`, subscriptionKey: 'copy', delivery: { start: 'now' } });
  }
}

const heapUsed = () => {
  fullCollection();
  return getHeapStatistics().used_heap_size;
};

describe('the memory of stream actors', () => {
  it('leaves nothing holding an actor once the sweep dropped it: subscription, sender, live reader', async () => {
    const timers = new ManualTimers();
    const engine = await engineWith(timers);
    await sources(engine, 0, 3);
    await (async () => {
      // The reader, ended; the test keeps nothing of it.
      const tail = engine.service.tail(null, '/src-0', { afterOffset: 0 })[Symbol.asyncIterator]();
      expect((await tail.next()).value).toMatchObject({ kind: 'opened' });
      await tail.return?.(undefined);
    })();
    const refs = [...engine.registry.loaded()].map((actor) => new WeakRef(actor));
    expect(refs.length).toBeGreaterThanOrEqual(3);
    for (let i = 0; i < 4 && [...engine.registry.loaded()].length > 0; i++) timers.fire();
    expect([...engine.registry.loaded()]).toEqual([]);
    // A WeakRef keeps its target until the job that made it has ended.
    await new Promise<void>((resolve) => setImmediate(resolve));
    fullCollection();
    expect(refs.filter((ref) => ref.deref() !== undefined).map((ref) => (ref.deref() as StreamActor).path)).toEqual([]);
    // Dropped, not lost: the next request loads the stream again with its subscription row.
    expect(engine.service.actor(null, '/src-1').subscriptions.get('copy')).toMatchObject({ cursor: 2 });
  });

  it('keeps a quiet loaded stream with one copy subscription under 4.5 KB of heap (5.4 KB before its maps, sets and closures were made on first use)', async () => {
    const timers = new ManualTimers();
    const engine = await engineWith(timers);
    await sources(engine, 0, 200); // warm: statements, code, caches
    const count = 3000;
    const before = heapUsed();
    await sources(engine, 200, count);
    const perStream = (heapUsed() - before) / count;
    expect([...engine.registry.loaded()].length).toBeGreaterThanOrEqual(count);
    expect(perStream).toBeLessThan(4.5 * 1024);
  });
});
