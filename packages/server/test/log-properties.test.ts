/**
 * Property tests of the log invariants (protocol §3.2, §4.1–§4.5, §10.1), driving the real
 * StreamActor over each storage adapter with random command sequences: batches of caller events
 * (some ephemeral, some with repeated idempotency keys carrying the same or another body, some
 * with offset assertions), pause/resume control events, destroys, actor reloads (as after an
 * eviction from the registry), and several appends issued in one event-loop turn (so SQLite
 * group-commits them together).
 *
 * A small model predicts each batch: the offsets it gets, which inputs answer a stored event, or
 * which typed rejection it meets. After every step the test checks, against storage itself:
 * - offsets are dense and strictly increasing from 1 within a lifetime, ephemeral included;
 * - an idempotent repeat answers the stored event; a rejected batch writes nothing;
 * - replay = live state: folding every durable event read back with `reduce` from null equals the
 *   actor's core state, the state loaded from storage (the streams row's checkpoint plus the event
 *   rows after it, storage format 3), and a freshly loaded actor's state; the checkpoint itself is
 *   a fold of the log up to its head, less than `checkpointEvery` behind;
 * - reads never return ephemeral events unless asked.
 *
 * The generated commands and the model are in helpers/log-model.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventType, RivuletError, type CommittedEvent, type CoreState, type EventInput } from '@rivulet/contract';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStorage } from '../src/adapters/memory/memory-storage.js';
import { SqliteStorage } from '../src/adapters/sqlite/sqlite-storage.js';
import { checkInput } from '../src/core/append-input.js';
import { reduce } from '../src/core/reduce.js';
import { StreamActor, type ActorDeps } from '../src/engine/actor.js';
import { defaultEngineConfig } from '../src/engine/config.js';
import { openSchema } from '../src/engine/schema.js';
import { StreamStore } from '../src/engine/stream-store.js';
import type { Clock, Random } from '../src/ports/clock.js';
import type { SqlStorage } from '../src/ports/storage.js';
import { systemTimer } from '../src/ports/timer.js';
import { bodyOf, emptyModel, plan, scenario, type Expected, type Model, type Step } from './helpers/log-model.js';

// ---- the system under test ----

function deterministicPorts(): { clock: Clock; random: Random } {
  let now = Date.parse('2025-01-01T00:00:00.000Z');
  let ids = 0;
  return {
    clock: { now: () => now++ },
    random: {
      next: () => 0.5,
      uuid: () => `00000000-0000-4000-8000-${(++ids).toString(16).padStart(12, '0')}`,
    },
  };
}

/** Appends as the service does for a public caller: check every input, then the actor decides. */
async function append(actor: StreamActor, inputs: EventInput[]): Promise<CommittedEvent[]> {
  const checked = inputs.map((input, i) => checkInput(input, 'public', i));
  return actor.append(checked, 'public');
}

function readAll(actor: StreamActor, includeEphemeral: boolean) {
  return actor.read({ afterOffset: 0, limit: 1_000_000, includeEphemeral });
}

function replay(events: readonly CommittedEvent[]): CoreState | null {
  let state: CoreState | null = null;
  for (const e of events) if (!e.ephemeral) state = reduce(state, e);
  return state;
}

/** Everything observable about one stream, for "nothing changed" checks. */
function snapshot(actor: StreamActor, store: StreamStore): string {
  return JSON.stringify({
    head: actor.head,
    state: actor.coreState,
    row: store.find(actor.projectId, actor.path) ?? null,
    events: readAll(actor, true),
  });
}

/** The invariants of the log, checked against storage after every step. */
function checkInvariants(actor: StreamActor, deps: ActorDeps, model: Model): void {
  const { store } = deps;
  expect(actor.exists).toBe(model.exists);
  expect(actor.head).toBe(model.head);
  expect(actor.durableHead).toBe(model.head);

  const all = readAll(actor, true);
  const durable = readAll(actor, false);
  const row = store.find(actor.projectId, actor.path);

  if (!model.exists) {
    expect(all).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    expect(durable.events).toEqual([]);
    expect(actor.coreState).toBeNull();
    expect(row).toBeUndefined();
    return;
  }

  // Dense, strictly increasing offsets from 1, ephemeral included; nothing past the head.
  expect(all.events.map((e) => e.offset)).toEqual(Array.from({ length: model.head }, (_, i) => i + 1));
  expect(all.streamMaxOffset).toBe(model.head);
  expect(durable.streamMaxOffset).toBe(model.head);

  // The lifetime opens with its created event.
  const created = all.events[0]!;
  expect(created.type).toBe(EventType.created);
  expect(created.payload).toEqual({ projectId: actor.projectId, path: actor.path, streamId: all.streamId });
  expect(model.streamIds[model.streamIds.length - 1]).toBe(all.streamId);

  // Stored events are exactly the events the appends answered.
  for (const e of all.events) {
    const answered = model.events.get(e.offset);
    if (answered) expect(e).toEqual(answered);
    else expect(e.offset).toBe(1);
    expect(e.path).toBe(actor.path);
  }

  // Reads leave ephemeral events out unless asked.
  expect(durable.events).toEqual(all.events.filter((e) => !e.ephemeral));
  expect(durable.events.some((e) => e.ephemeral)).toBe(false);

  // Replay = live state = saved state = a freshly loaded actor's state.
  const replayed = replay(all.events);
  expect(replayed).toEqual(actor.coreState);
  expect(store.stateOf(row!)).toEqual(replayed);
  expect(row!.head).toBe(model.head);
  // The streams row is a checkpoint less than checkpointEvery behind, whose counters are a fold
  // of the log up to it; loading adds the rest (the derived counters above equal the fold).
  expect(row!.checkpoint).toBeLessThanOrEqual(model.head);
  expect(model.head - row!.checkpoint).toBeLessThan(store.checkpointEvery);
  const stored = store.storage.exec<{ head: number; event_count: number; max_offset: number }>(
    `SELECT head, event_count, max_offset FROM streams WHERE sid = ?`,
    row!.sid,
  )[0]!;
  const prefix = replay(all.events.filter((e) => e.offset <= row!.checkpoint));
  expect(stored).toEqual({ head: row!.checkpoint, event_count: prefix!.eventCount, max_offset: prefix!.maxOffset });
  expect(row!.stream_id).toBe(all.streamId);
  expect(row!.created_at).toBe(created.createdAt);
  expect(replayed!.paused).toBe(model.paused);
  expect(replayed!.maxOffset).toBe(Math.max(...durable.events.map((e) => e.offset)));
  expect(replayed!.eventCount).toBe(durable.events.length);
  const fresh = new StreamActor(actor.projectId, actor.path, deps);
  expect(fresh.coreState).toEqual(replayed);
  expect(fresh.head).toBe(model.head);
  expect(readAll(fresh, true)).toEqual(all);
}

/** Checks the answer of one append against its plan and records the answered events. */
function checkOutcome(
  model: Model,
  planned: { inputs: EventInput[]; expected: Expected },
  outcome: PromiseSettledResult<CommittedEvent[]>,
): void {
  const { inputs, expected } = planned;
  if (!expected.ok) {
    expect(outcome.status, `expected ${expected.code} for ${JSON.stringify(inputs)}`).toBe('rejected');
    const reason = (outcome as PromiseRejectedResult).reason as unknown;
    expect(reason).toBeInstanceOf(RivuletError);
    expect((reason as RivuletError).code).toBe(expected.code);
    return;
  }
  if (outcome.status === 'rejected') throw outcome.reason;
  const results = outcome.value;
  expect(results.map((e) => e.offset)).toEqual(expected.offsets);
  results.forEach((event, i) => {
    const input = inputs[i]!;
    const stored = model.events.get(event.offset);
    if (stored) {
      // An idempotent repeat (or an in-batch duplicate) answers the stored event.
      expect(event).toEqual(stored);
      return;
    }
    expect(bodyOf(event)).toBe(bodyOf(input));
    expect(event.idempotencyKey).toBe(input.idempotencyKey);
    expect(event).not.toHaveProperty('offset', undefined);
    model.events.set(event.offset, event);
  });
}

async function runScenario(
  storage: SqlStorage,
  path: string,
  projectId: string | null,
  steps: Step[],
  checkpointEvery: number,
): Promise<void> {
  const { clock, random } = deterministicPorts();
  const deps: ActorDeps = { store: new StreamStore(storage, { checkpointEvery }), clock, random, timer: systemTimer, config: defaultEngineConfig };
  let actor = new StreamActor(projectId, path, deps);
  let model = emptyModel();

  for (const s of steps) {
    if (s.kind === 'destroy') {
      await expect(actor.destroy()).resolves.toBe(model.exists);
      model = emptyModel(model.streamIds);
    } else if (s.kind === 'reload') {
      actor = new StreamActor(projectId, path, deps);
    } else {
      const before = snapshot(actor, deps.store);
      const plans = s.batches.map((specs) => plan(model, specs));
      // Every append of the group is issued in the same turn; each decides synchronously.
      const outcomes = await Promise.allSettled(plans.map((p) => append(actor, p.inputs)));
      plans.forEach((p, i) => {
        if (p.expected.ok && p.expected.created) {
          const streamId = actor.read({ afterOffset: 0, limit: 1, includeEphemeral: true }).streamId!;
          expect(model.streamIds).not.toContain(streamId);
          model.streamIds.push(streamId);
        }
        checkOutcome(model, p, outcomes[i]!);
      });
      // A group of rejected batches writes nothing at all.
      if (plans.every((p) => !p.expected.ok)) expect(snapshot(actor, deps.store)).toBe(before);
    }
    checkInvariants(actor, deps, model);
  }
}

// ---- the runs ----

describe.each([
  {
    name: 'MemoryStorage',
    numRuns: 60,
    open: async () => ({ storage: (await MemoryStorage.create()) as SqlStorage, cleanup: () => undefined }),
  },
  {
    name: 'SqliteStorage (file, group commit)',
    numRuns: 40,
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'rivulet-log-properties-'));
      const storage = new SqliteStorage(join(dir, 'data.sqlite'), { durability: 'relaxed' });
      return { storage: storage as SqlStorage, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: 'SqliteStorage (file, groupCommit=false)',
    numRuns: 20,
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'rivulet-log-properties-'));
      const storage = new SqliteStorage(join(dir, 'data.sqlite'), { durability: 'relaxed', groupCommit: false });
      return { storage: storage as SqlStorage, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
])('log invariants over $name', ({ open, numRuns }) => {
  let storage: SqlStorage;
  let cleanup: () => void;
  let run = 0;

  beforeAll(async () => {
    ({ storage, cleanup } = await open());
    openSchema(storage);
  });

  afterAll(() => {
    storage.close();
    cleanup();
  });

  it('dense offsets, idempotent repeats, atomic rejections, replay = live state, ephemeral reads', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ projectId, steps, checkpointEvery }) => {
        // Every run owns its stream; runs share the database as streams of one host do.
        await runScenario(storage, `/property/run-${++run}`, projectId, steps, checkpointEvery);
      }),
      { numRuns },
    );
  });

  it('streams sharing the database do not see each other', async () => {
    const { clock, random } = deterministicPorts();
    const deps: ActorDeps = { store: new StreamStore(storage), clock, random, timer: systemTimer, config: defaultEngineConfig };
    const a = new StreamActor('proj', '/isolation/a', deps);
    const b = new StreamActor(null, '/isolation/a', deps);
    const c = new StreamActor('proj', '/isolation/b', deps);
    await Promise.all([append(a, [{ type: 'app/x', idempotencyKey: 'k' }]), append(b, [{ type: 'app/y', idempotencyKey: 'k' }])]);
    await append(c, [{ type: 'app/z' }, { type: 'app/z' }]);
    expect(readAll(a, true).events.map((e) => e.type)).toEqual([EventType.created, 'app/x']);
    expect(readAll(b, true).events.map((e) => e.type)).toEqual([EventType.created, 'app/y']);
    expect(c.head).toBe(3);
    await a.destroy();
    expect(b.head).toBe(2);
    expect(new StreamActor(null, '/isolation/a', deps).head).toBe(2);
  });
});
