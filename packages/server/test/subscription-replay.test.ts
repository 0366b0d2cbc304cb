/**
 * Replay = live (protocol §10): random sequences of subscription control appends
 * (configure, remove, cursor-set, platform halt, resume), pauses, ordinary and ephemeral events,
 * and incoming copy batches (through actor.receiveCopies, with stamps from a few source lifetimes
 * and config generations, some of them cycles or at the hop bound) on actors over MemoryStorage.
 * Rejections are part of the sequence (nothing is written for them). After each run, folding every
 * durable event read back from storage with `reduce` from null deep-equals the live core state —
 * inbound fence records included — and so do the stored state and a fresh registry's state; the
 * runtime rows agree with the outbound entries.
 */
import {
  EventType,
  Limits,
  RivuletError,
  type CommittedEvent,
  type CopyHop,
  type CoreState,
  type EventInput,
  type JsonObject,
  type Receiver,
} from '@rivulet/contract';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../src/adapters/memory/memory-storage.js';
import { checkInput } from '../src/core/append-input.js';
import type { CopyBatch, CopyBatchEvent } from '../src/core/copy-builder.js';
import { reduce } from '../src/core/reduce.js';
import { defaultEngineConfig } from '../src/engine/config.js';
import { StreamRegistry } from '../src/engine/registry.js';
import { openSchema } from '../src/engine/schema.js';
import { StreamStore } from '../src/engine/stream-store.js';
import { systemTimer } from '../src/ports/timer.js';

const PROJECT = 'proj';
const PATHS = ['/s1', '/s2'] as const;
const LIFETIMES = [
  { streamId: 'sid-a', streamCreatedAt: '2025-01-01T00:00:00.000Z' },
  { streamId: 'sid-b', streamCreatedAt: '2025-01-01T00:00:00.000Z' },
  { streamId: 'sid-c', streamCreatedAt: '2025-02-01T00:00:00.000Z' },
] as const;

type Path = (typeof PATHS)[number];
/** An explicit key, an existing generated key, or a reserved key that does not exist. */
type KeyChoice = 'k1' | 'k2' | 'k3' | '<generated>' | 'subscription:4';

/** A command's target: an existing key of the stream (by index), or one that does not exist. */
type Target = { existing: number } | { missing: true };

type Op =
  | { op: 'configure'; path: Path; key: KeyChoice | null; action: Receiver['action']; start: 'beginning' | 'now'; idem: boolean }
  | { op: 'remove'; path: Path; target: Target }
  | { op: 'cursor-set'; path: Path; target: Target; offset: number; beyondHead: boolean }
  | { op: 'halt'; path: Path; target: Target; afterOffset: number; attempts: number; error: string | null }
  | { op: 'resume'; path: Path; target: Target }
  | { op: 'event'; path: Path; n: number; ephemeral: boolean }
  | { op: 'pause' | 'unpause'; path: Path }
  | {
      op: 'copies';
      path: Path;
      source: string;
      key: string;
      lifetime: number;
      generation: number;
      firstOffset: number;
      count: number;
      shapedType: string;
      prior: 'none' | 'other' | 'cycle' | 'hop-limit';
    };

const path = fc.constantFrom(...PATHS);
const key: fc.Arbitrary<KeyChoice> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('k1', 'k2', 'k3' as const) },
  { weight: 1, arbitrary: fc.constantFrom('<generated>', 'subscription:4' as const) },
);
const target: fc.Arbitrary<Target> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ existing: fc.nat({ max: 5 }) }) },
  { weight: 1, arbitrary: fc.constant({ missing: true as const }) },
);

const configureArb: fc.Arbitrary<Op> = fc.record({
  op: fc.constant('configure' as const),
  path,
  key: fc.option(key, { nil: null, freq: 6 }),
  action: fc.constantFrom('copy-to-stream', 'itx-call', 'webhook-post', 'processor-wake' as const),
  start: fc.constantFrom('beginning', 'now' as const),
  idem: fc.boolean(),
});

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: configureArb },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('remove' as const), path, target }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('cursor-set' as const), path, target, offset: fc.nat({ max: 40 }), beyondHead: fc.integer({ min: 0, max: 5 }).map((n) => n === 0) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('halt' as const), path, target, afterOffset: fc.integer({ min: 0, max: 25 }), attempts: fc.integer({ min: 1, max: 20 }), error: fc.option(fc.string({ maxLength: 12 }), { nil: null }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('resume' as const), path, target }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('event' as const), path, n: fc.integer({ min: 0, max: 99 }), ephemeral: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constantFrom('pause' as const, 'unpause' as const), path }) },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('copies' as const),
      path,
      source: fc.constantFrom('/src1', '/s1', '/s2'),
      key: fc.constantFrom('c1', 'c2'),
      lifetime: fc.integer({ min: 0, max: LIFETIMES.length - 1 }),
      generation: fc.integer({ min: 1, max: 4 }),
      firstOffset: fc.integer({ min: 1, max: 20 }),
      count: fc.integer({ min: 1, max: 3 }),
      shapedType: fc.constantFrom('app/copied', EventType.subscriptionConfigured, EventType.subscriptionCursorSet, EventType.paused),
      prior: fc.constantFrom('none', 'none', 'other', 'cycle', 'hop-limit' as const),
    }),
  },
);

function receiverFor(action: Receiver['action'], start: 'beginning' | 'now', self: Path): Receiver {
  switch (action) {
    case 'copy-to-stream':
      return { action, receivingStreamPath: self === '/s1' ? '/s2' : '/s1', delivery: { start, onFailingEvent: 'halt' } };
    case 'itx-call':
      return { action, expression: ['workers', ['get', 'w'], 'processEventBatch'], delivery: { start, onFailingEvent: 'skip' } };
    case 'webhook-post':
      return { action, url: 'https://example.com/hook', delivery: { start, onFailingEvent: 'halt' } };
    case 'processor-wake':
      return { action, expression: ['processors', ['get', 'p'], 'wakeStreamProcessor'] };
  }
}

function hop(p: string, i: number): CopyHop {
  return {
    projectId: PROJECT,
    path: p,
    streamId: `sid-${p}`,
    streamCreatedAt: '2024-12-01T00:00:00.000Z',
    offset: i + 1,
    type: 'app/x',
    createdAt: '2024-12-01T00:00:00.000Z',
    subscriptionKey: 'upstream',
    cursorChangedAtSourceOffset: 1,
  };
}

class World {
  readonly store: StreamStore;
  readonly registry: StreamRegistry;

  constructor(readonly storage: MemoryStorage) {
    openSchema(storage);
    this.store = new StreamStore(storage);
    this.registry = World.registry(this.store);
  }

  static registry(store: StreamStore): StreamRegistry {
    let ids = 0;
    return new StreamRegistry({
      store,
      clock: { now: () => Date.now() },
      random: { next: () => 0.5, uuid: () => `00000000-0000-4000-8000-${String(++ids).padStart(12, '0')}` },
      timer: systemTimer,
      config: { ...defaultEngineConfig, allowPrivateWebhooks: false },
    });
  }

  actor(p: string) {
    return this.registry.get(PROJECT, p);
  }

  target(p: Path, t: Target): string {
    const keys = Object.keys(this.actor(p).coreState?.subscriptions.outbound.byKey ?? {}).sort();
    if ('missing' in t || keys.length === 0) return 'missing-key';
    return keys[t.existing % keys.length]!;
  }

  resolveKey(p: Path, choice: KeyChoice): string {
    if (choice !== '<generated>') return choice;
    const byKey = this.actor(p).coreState?.subscriptions.outbound.byKey ?? {};
    return Object.keys(byKey).find((k) => byKey[k]!.subscriptionKeyWasGenerated) ?? 'subscription:1';
  }

  publicAppend(p: Path, ...inputs: EventInput[]) {
    return this.actor(p).append(
      inputs.map((input, i) => checkInput(input, 'public', i)),
      'public',
    );
  }

  async apply(op: Op, step: number): Promise<void> {
    switch (op.op) {
      case 'configure': {
        const payload: JsonObject = { receiver: receiverFor(op.action, op.start, op.path) as unknown as JsonObject };
        if (op.key !== null) payload.subscriptionKey = this.resolveKey(op.path, op.key);
        await this.publicAppend(op.path, {
          type: EventType.subscriptionConfigured,
          payload,
          ...(op.idem ? { idempotencyKey: `configure-${op.path}-${op.key ?? 'none'}-${op.action}` } : {}),
        });
        return;
      }
      case 'remove':
        await this.publicAppend(op.path, { type: EventType.subscriptionRemoved, payload: { subscriptionKey: this.target(op.path, op.target), reason: 'requested' } });
        return;
      case 'cursor-set': {
        const head = this.actor(op.path).head;
        const afterOffset = op.beyondHead ? head + 1 + (op.offset % 3) : op.offset % (head + 1);
        await this.publicAppend(op.path, { type: EventType.subscriptionCursorSet, payload: { subscriptionKey: this.target(op.path, op.target), afterOffset } });
        return;
      }
      case 'halt':
        await this.actor(op.path).append(
          [
            {
              type: EventType.subscriptionDeliveryHalted,
              payload: {
                subscriptionKey: this.target(op.path, op.target),
                reason: 'delivery-failed',
                afterOffset: op.afterOffset,
                attempts: op.attempts,
                ...(op.error !== null ? { error: op.error } : {}),
              },
            },
          ],
          'platform',
        );
        return;
      case 'resume':
        await this.publicAppend(op.path, { type: EventType.subscriptionDeliveryResumed, payload: { subscriptionKey: this.target(op.path, op.target) } });
        return;
      case 'event':
        await this.publicAppend(op.path, { type: 'app/x', payload: { n: op.n, step }, ...(op.ephemeral ? { ephemeral: true as const } : {}) });
        return;
      case 'pause':
        await this.publicAppend(op.path, { type: EventType.paused, payload: { reason: `step ${step}` } });
        return;
      case 'unpause':
        await this.publicAppend(op.path, { type: EventType.resumed });
        return;
      case 'copies': {
        const lifetime = LIFETIMES[op.lifetime]!;
        const prior: CopyHop[] =
          op.prior === 'none'
            ? []
            : op.prior === 'other'
              ? [hop('/upstream', 0)]
              : op.prior === 'cycle'
                ? [hop(op.path, 0)]
                : Array.from({ length: Limits.maxHops }, (_, i) => hop(`/h${i}`, i));
        const events: CopyBatchEvent[] = Array.from({ length: op.count }, (_, i) => ({
          offset: op.firstOffset + i,
          type: 'app/original',
          createdAt: lifetime.streamCreatedAt,
          ...(prior.length > 0 && i === 0 ? { source: { copiedFrom: prior } } : {}),
          shaped: { type: op.shapedType, payload: { i, step } },
        }));
        const batch: CopyBatch = {
          projectId: PROJECT,
          path: op.source,
          ...lifetime,
          cursorChangedAtSourceOffset: op.generation,
          subscriptionKey: op.key,
          receivingStreamPath: op.path,
          events,
        };
        await this.actor(op.path).receiveCopies(batch);
        return;
      }
    }
  }

  /** Every durable event of a stream, read back from storage. */
  durableEvents(p: string): CommittedEvent[] {
    const out: CommittedEvent[] = [];
    for (;;) {
      const page = this.actor(p).read({ afterOffset: out[out.length - 1]?.offset ?? 0, limit: 500, includeEphemeral: false });
      out.push(...page.events);
      if (page.events.length < 500) return out;
    }
  }
}

function replay(events: readonly CommittedEvent[]): CoreState | null {
  let state: CoreState | null = null;
  for (const event of events) state = reduce(state, event);
  return state;
}

describe('subscription state: replay = live', () => {
  it('folding the stored log equals the live core state, the stored state and a reloaded state', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(configureArb, { minLength: 1, maxLength: 4 }), fc.array(opArb, { minLength: 1, maxLength: 30 }), async (setup, rest) => {
        const ops = [...setup, ...rest];
        const storage = await MemoryStorage.create();
        try {
          const world = new World(storage);
          for (const [step, op] of ops.entries()) {
            try {
              await world.apply(op, step);
            } catch (error) {
              if (!(error instanceof RivuletError)) throw error;
            }
          }
          const reloaded = World.registry(world.store);
          for (const p of [...PATHS, '/src1']) {
            const actor = world.actor(p);
            const live = actor.coreState;
            const events = world.durableEvents(p);
            expect(replay(events)).toEqual(live);
            if (live === null) continue;
            expect(world.store.stateOf(world.store.find(PROJECT, p)!)).toEqual(live);
            expect(reloaded.get(PROJECT, p).coreState).toEqual(live);
            expect(live.maxOffset).toBe(events[events.length - 1]!.offset);
            // each fence record is the stamp of the last copy committed for its (source, key)
            for (const [source, byKey] of Object.entries(live.subscriptions.inbound.bySourcePath)) {
              for (const [k, record] of Object.entries(byKey)) {
                const copies = events.filter((e) => {
                  const last = e.source?.copiedFrom.at(-1);
                  return last?.path === source && last.subscriptionKey === k;
                });
                const stamp = copies.at(-1)?.source?.copiedFrom.at(-1);
                expect(stamp).toBeDefined();
                expect(record).toMatchObject({
                  streamId: stamp!.streamId,
                  streamCreatedAt: stamp!.streamCreatedAt,
                  cursorChangedAtSourceOffset: stamp!.cursorChangedAtSourceOffset,
                  lastEventReceivedAt: copies.at(-1)!.createdAt,
                });
              }
            }
            // runtime rows: one per outbound entry, on that entry's configuration
            const rows = [...actor.subscriptions.all()];
            const byKey = live.subscriptions.outbound.byKey;
            expect(rows.map((r) => r.key).sort()).toEqual(Object.keys(byKey).sort());
            for (const row of rows) {
              expect(row.runConfiguredAt).toBe(byKey[row.key]!.configuredAtOffset);
              expect(row.halted).toBe(byKey[row.key]!.deliveryHalted !== undefined);
            }
          }
        } finally {
          storage.close();
        }
      }),
      { numRuns: 80 },
    );
  });
});
