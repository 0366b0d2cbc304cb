/**
 * tailStream (protocol §5.2): durable replay after a cursor, then live events, with
 * no gap and no duplicate at the seam, also when appends race with the replay; a reader that falls
 * behind catches up from storage without losing a durable event; destroy ends the tail.
 * Runs over MemoryStorage and over SQLite with group commit (where publication waits a turn).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventType, type CommittedEvent } from '@rivulet/contract';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStorage } from '../adapters/memory/memory-storage.js';
import { SqliteStorage } from '../adapters/sqlite/sqlite-storage.js';
import type { AppendInput } from '../core/append-input.js';
import type { SqlStorage } from '../ports/storage.js';
import { systemTimer } from '../ports/timer.js';
import { StreamActor } from './actor.js';
import { defaultEngineConfig } from './config.js';
import { openSchema } from './schema.js';
import { StreamStore } from './stream-store.js';
import { tailStream, type TailItem, type TailOptions } from './tail.js';

interface Harness {
  storage: SqlStorage;
  cleanup(): void;
}

const adapters: Array<{ name: string; open: () => Promise<Harness> }> = [
  {
    name: 'MemoryStorage',
    open: async () => {
      const storage = await MemoryStorage.create();
      return { storage, cleanup: () => storage.close() };
    },
  },
  {
    name: 'SqliteStorage (group commit)',
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'rivulet-tail-'));
      const storage = new SqliteStorage(join(dir, 'data.sqlite'), { durability: 'relaxed' });
      return {
        storage,
        cleanup: () => {
          storage.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
];

let opened: Harness[] = [];
let streams = 0;

afterEach(() => {
  for (const h of opened) h.cleanup();
  opened = [];
});

async function newActor(open: () => Promise<Harness>): Promise<StreamActor> {
  const harness = await open();
  opened.push(harness);
  openSchema(harness.storage);
  let now = Date.parse('2025-01-01T00:00:00.000Z');
  let ids = 0;
  return new StreamActor('proj', `/tail/${++streams}`, {
    store: new StreamStore(harness.storage),
    clock: { now: () => now++ },
    random: { next: () => 0.5, uuid: () => `00000000-0000-4000-8000-${(++ids).toString(16).padStart(12, '0')}` },
    timer: systemTimer,
    config: defaultEngineConfig,
  });
}

const events = (count: number, ephemeral: (i: number) => boolean = () => false, type = 'app/x'): AppendInput[] =>
  Array.from({ length: count }, (_, i) => ({ type, payload: { i }, ...(ephemeral(i) ? { ephemeral: true as const } : {}) }));

/** Rejects when `promise` does not settle in time: a stalled tail fails clearly instead of hanging. */
function guard<T>(promise: Promise<T>, what: () => string, timeoutMs = 2000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`tail stalled: ${what()}`)), timeoutMs);
  });
  return Promise.race([promise, stalled]).finally(() => clearTimeout(timer));
}

/** A tail read item by item, recording what it yields. */
class Reader {
  readonly parsed: CommittedEvent[] = [];
  readonly items: TailItem[] = [];
  readonly abort = new AbortController();
  private readonly iterator: AsyncGenerator<TailItem>;

  constructor(actor: StreamActor, options: TailOptions) {
    this.iterator = tailStream(actor, { signal: this.abort.signal, ...options });
  }

  get offsets(): number[] {
    return this.parsed.map((e) => e.offset);
  }

  /** next() calls not answered yet. */
  waiting = 0;

  /**
   * The next `events` or `destroyed` item (other kinds, such as an opening notice, are recorded in
   * `items` and passed over). The first call starts the generator, which registers its live
   * listener synchronously.
   */
  async next(): Promise<IteratorResult<TailItem>> {
    this.waiting++;
    try {
      for (;;) {
        const result = await this.iterator.next();
        if (result.done) return result;
        this.items.push(result.value);
        if (result.value.kind === 'events') {
          for (const e of result.value.events) {
            const event = JSON.parse(e.json) as CommittedEvent;
            expect(event.offset).toBe(e.offset);
            this.parsed.push(event);
          }
          return result;
        }
        if (result.value.kind === 'destroyed') return result;
      }
    } finally {
      this.waiting--;
    }
  }

  /** The next item, failing if none comes in time. */
  pull(): Promise<IteratorResult<TailItem>> {
    return guard(this.next(), () => `after offsets [${this.offsets.join(',')}]`);
  }

  async pullUntil(done: () => boolean): Promise<void> {
    while (!done()) {
      const result = await this.pull();
      if (result.done) throw new Error('tail ended early');
    }
  }

  async close(): Promise<void> {
    await this.iterator.return(undefined);
  }
}

function expectStrictlyIncreasing(offsets: readonly number[]): void {
  for (let i = 1; i < offsets.length; i++) expect(offsets[i]!, `offsets ${offsets.join(',')}`).toBeGreaterThan(offsets[i - 1]!);
}

describe.each(adapters)('tailStream over $name', ({ open }) => {
  it('replays durable events after the cursor, skipping ephemeral ones, then delivers live ones (ephemeral included)', async () => {
    const actor = await newActor(open);
    await actor.append(events(6, (i) => i % 3 === 1), 'public'); // offsets 2..7; 3 and 6 ephemeral
    const reader = new Reader(actor, { afterOffset: 2, pageSize: 2 });
    await reader.pullUntil(() => reader.offsets.includes(7));
    expect(reader.offsets).toEqual([4, 5, 7]);
    await actor.append(events(2, (i) => i === 0), 'public'); // 8 ephemeral, 9
    await reader.pullUntil(() => reader.offsets.includes(9));
    expect(reader.offsets).toEqual([4, 5, 7, 8, 9]);
    expect(reader.parsed.find((e) => e.offset === 8)!.ephemeral).toBe(true);
    await reader.close();
    expect(actor.listenerCount).toBe(0);
  });

  it('a tail of a stream that does not exist yet sees it being created', async () => {
    const actor = await newActor(open);
    const reader = new Reader(actor, { afterOffset: 0 });
    const first = reader.pull();
    await actor.append(events(2), 'public');
    await first;
    await reader.pullUntil(() => reader.offsets.length >= 3);
    expect(reader.offsets).toEqual([1, 2, 3]);
    expect(reader.parsed[0]!.type).toBe(EventType.created);
    await reader.close();
  });

  it('filters replay and live events by type', async () => {
    const actor = await newActor(open);
    await actor.append([...events(2, () => false, 'app/a'), ...events(2, () => false, 'app/b')], 'public');
    const reader = new Reader(actor, { afterOffset: 0, eventTypes: ['app/b'], pageSize: 1 });
    await reader.pullUntil(() => reader.offsets.length >= 2);
    await actor.append([...events(1, () => false, 'app/a'), ...events(1, () => false, 'app/b')], 'public');
    await reader.pullUntil(() => reader.offsets.length >= 3);
    expect(reader.offsets).toEqual([4, 5, 7]);
    expect(reader.parsed.every((e) => e.type === 'app/b')).toBe(true);
    await reader.close();
  });

  it('appends racing with a paged replay leave no gap and no duplicate (property)', async () => {
    const appendOp = fc.record({
      kind: fc.constant('append' as const),
      count: fc.integer({ min: 1, max: 3 }),
      ephemeralMask: fc.nat({ max: 7 }),
      wait: fc.boolean(),
    });
    const op = fc.oneof(appendOp, fc.constant({ kind: 'pull' as const }), fc.constant({ kind: 'turn' as const }));
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          initial: fc.nat({ max: 12 }),
          initialEphemeralMask: fc.nat({ max: 15 }),
          pageSize: fc.integer({ min: 1, max: 4 }),
          afterOffset: fc.nat({ max: 4 }),
          maxBuffered: fc.oneof(fc.constant(undefined), fc.integer({ min: 1, max: 4 })),
          ops: fc.array(op, { maxLength: 30 }),
        }),
        async ({ initial, initialEphemeralMask, pageSize, afterOffset, maxBuffered, ops }) => {
          const actor = await newActor(open);
          /** Offset → ephemeral? for every event appended after the tail registered. */
          const live = new Map<number, boolean>();
          const durableBefore: number[] = [];
          if (initial > 0) {
            const committed = await actor.append(events(initial, (i) => ((initialEphemeralMask >> i % 4) & 1) === 1), 'public');
            durableBefore.push(1, ...committed.filter((e) => !e.ephemeral).map((e) => e.offset));
          }
          const reader = new Reader(actor, { afterOffset, pageSize, ...(maxBuffered ? { maxBuffered } : {}) });
          const pending: Array<Promise<unknown>> = [];
          let appended = 0;
          const expectedDurable = () => [
            ...durableBefore.filter((o) => o > afterOffset),
            ...[...live].filter(([o, eph]) => o > afterOffset && !eph).map(([o]) => o),
          ];
          const expectedEphemeral = () => [...live].filter(([o, eph]) => eph && o > afterOffset).map(([o]) => o);
          /** Something committed is still owed to the reader (ephemeral too, unless it may overflow). */
          const owed = () =>
            reader.parsed.filter((e) => !e.ephemeral).length < expectedDurable().length ||
            (!maxBuffered && reader.parsed.filter((e) => e.ephemeral).length < expectedEphemeral().length);
          let pulling: Promise<unknown> | undefined;
          const pull = () => {
            pulling = reader.next().finally(() => {
              pulling = undefined;
            });
          };
          // The first pull registers the listener; everything appended later is "live".
          pull();

          for (const o of ops) {
            if (o.kind === 'append') {
              const inputs = events(o.count, (i) => ((o.ephemeralMask >> i) & 1) === 1);
              const created = !actor.exists && appended === 0 && initial === 0;
              const promise = actor.append(inputs, 'public').then((committed) => {
                if (created) live.set(1, false);
                for (const e of committed) live.set(e.offset, e.ephemeral === true);
              });
              appended++;
              pending.push(promise);
              if (o.wait) await promise;
            } else if (o.kind === 'turn') {
              await new Promise((resolve) => setImmediate(resolve));
            } else if (!pulling && owed()) {
              // Pull only while something is owed, so a pull never waits forever.
              pull();
            }
          }
          await Promise.all(pending);
          while (owed()) await guard(pulling ?? reader.next(), () => `after offsets [${reader.offsets.join(',')}]`);
          if (reader.waiting > 0) {
            // Nothing is owed, yet a pull waits for more: ending the tail answers it.
            reader.abort.abort();
            await guard(pulling!, () => 'abort did not end the tail');
          } else {
            await pulling;
            await reader.close();
          }

          expectStrictlyIncreasing(reader.offsets);
          const durable = expectedDurable().sort((a, b) => a - b);
          expect(reader.parsed.filter((e) => !e.ephemeral).map((e) => e.offset)).toEqual(durable);
          // Ephemeral events come only live, only from after registration, and (unless the reader
          // overflowed) all of them.
          const ephemeralSeen = reader.parsed.filter((e) => e.ephemeral).map((e) => e.offset);
          for (const o of ephemeralSeen) expect(live.get(o)).toBe(true);
          if (!maxBuffered) expect(ephemeralSeen).toEqual(expectedEphemeral().sort((a, b) => a - b));
          // What the tail yields is what storage holds.
          const stored = actor.read({ afterOffset: 0, limit: 10_000, includeEphemeral: true }).events;
          for (const e of reader.parsed) expect(e).toEqual(stored.find((s) => s.offset === e.offset));
          expect(actor.listenerCount).toBe(0);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('a reader that overflows catches up from storage without losing or repeating a durable event', async () => {
    const actor = await newActor(open);
    await actor.append(events(4), 'public'); // 1..5
    const reader = new Reader(actor, { afterOffset: 0, pageSize: 2, maxBuffered: 3 });
    await reader.pull(); // registered; first replay page [1, 2]
    // The reader does not pull while 20 single-event appends commit, every third one ephemeral.
    const appended: CommittedEvent[] = [];
    for (let i = 0; i < 20; i++) appended.push(...(await actor.append(events(1, () => i % 3 === 0), 'public')));
    const durable = [1, 2, 3, 4, 5, ...appended.filter((e) => !e.ephemeral).map((e) => e.offset)];
    await reader.pullUntil(() => reader.parsed.filter((e) => !e.ephemeral).length >= durable.length);
    expectStrictlyIncreasing(reader.offsets);
    expect(reader.parsed.filter((e) => !e.ephemeral).map((e) => e.offset)).toEqual(durable);
    // The catch-up came from storage: the missed ephemeral events are gone for this reader.
    expect(reader.parsed.filter((e) => e.ephemeral)).toEqual([]);
    // Once caught up, live delivery resumes, ephemeral included.
    const [eph, dur] = await actor.append(events(2, (i) => i === 0), 'public');
    await reader.pullUntil(() => reader.offsets.includes(dur!.offset));
    expect(reader.offsets.slice(-2)).toEqual([eph!.offset, dur!.offset]);
    await reader.close();
  });

  it('overflowing again during a catch-up still loses nothing durable', async () => {
    const actor = await newActor(open);
    await actor.append(events(10), 'public');
    const reader = new Reader(actor, { afterOffset: 0, pageSize: 1, maxBuffered: 1 });
    await reader.pull();
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 4; i++) await actor.append(events(2), 'public');
      await reader.pull();
    }
    const head = actor.head;
    await reader.pullUntil(() => reader.offsets.includes(head));
    expect(reader.offsets).toEqual(Array.from({ length: head }, (_, i) => i + 1));
    await reader.close();
  });

  it('destroy ends a waiting tail with {kind: "destroyed"} and removes its listener', async () => {
    const actor = await newActor(open);
    await actor.append(events(2), 'public');
    const reader = new Reader(actor, { afterOffset: 0 });
    await reader.pull();
    const waiting = reader.pull();
    expect(actor.listenerCount).toBe(1);
    await actor.destroy();
    await expect(waiting).resolves.toEqual({ done: false, value: { kind: 'destroyed' } });
    await expect(reader.pull()).resolves.toEqual({ done: true, value: undefined });
    expect(actor.listenerCount).toBe(0);
  });

  it('destroy during the replay stops the replay and ends the tail', async () => {
    const actor = await newActor(open);
    await actor.append(events(9), 'public');
    const reader = new Reader(actor, { afterOffset: 0, pageSize: 2 });
    await reader.pull();
    expect(reader.offsets).toEqual([1, 2]);
    await actor.destroy();
    const rest: TailItem[] = [];
    for (;;) {
      const result = await reader.pull();
      if (result.done) break;
      rest.push(result.value);
    }
    expect(rest).toEqual([{ kind: 'destroyed' }]);
    expect(actor.listenerCount).toBe(0);
  });

  it('an abort signal ends a waiting tail', async () => {
    const actor = await newActor(open);
    await actor.append(events(1), 'public');
    const controller = new AbortController();
    const reader = new Reader(actor, { afterOffset: 0, signal: controller.signal });
    await reader.pull();
    const waiting = reader.pull();
    controller.abort();
    await expect(waiting).resolves.toEqual({ done: true, value: undefined });
    expect(actor.listenerCount).toBe(0);
  });

  it('a caught-up reader with `live` is handed its live events at publication, before the append answers; refused ones come through the generator', async () => {
    const actor = await newActor(open);
    await actor.append(events(2, () => false, 'app/a'), 'public'); // 1..3
    const handed: number[][] = [];
    let accept = true;
    const reader = new Reader(actor, {
      afterOffset: 0,
      eventTypes: ['app/a'],
      live: (raw) => {
        if (!accept) return false;
        handed.push(raw.map((e) => (JSON.parse(e.json) as CommittedEvent).offset));
        return true;
      },
    });
    await reader.pullUntil(() => reader.offsets.includes(3));
    expect(reader.offsets).toEqual([2, 3]);
    const parked = reader.pull();
    await new Promise((resolve) => setImmediate(resolve));
    // Handed over during publication: by the time the append answers, the reader has them.
    const appended = actor.append([...events(1, () => false, 'app/b'), ...events(2, () => false, 'app/a')], 'public'); // 4 (b), 5, 6
    await appended;
    expect(handed).toEqual([[5, 6]]);
    // Refused: they queue and wake the generator, from the cursor the hand-over left.
    accept = false;
    await actor.append(events(1, () => false, 'app/a'), 'public'); // 7
    await guard(parked, () => 'the refused event did not wake the generator');
    expect(reader.offsets).toEqual([2, 3, 7]);
    // A reader that pulls again is caught up, so the next events are handed over again.
    accept = true;
    const next = reader.next();
    await new Promise((resolve) => setImmediate(resolve));
    await actor.append(events(1, () => false, 'app/a'), 'public'); // 8
    expect(handed).toEqual([[5, 6], [8]]);
    expect(reader.offsets).toEqual([2, 3, 7]);
    reader.abort.abort();
    await expect(guard(next, () => 'the abort did not end the tail')).resolves.toEqual({ done: true, value: undefined });
    expect(actor.listenerCount).toBe(0);
  });

  it('a reader that overflows after a hand-over catches up from where the hand-over left it', async () => {
    const actor = await newActor(open);
    await actor.append(events(1), 'public'); // 1, 2
    let accept = true;
    const handed: number[] = [];
    const reader = new Reader(actor, {
      afterOffset: 0,
      maxBuffered: 1,
      live: (raw) => accept && (handed.push(...raw.map((e) => e.offset)), true),
    });
    await reader.pullUntil(() => reader.offsets.includes(2));
    const parked = reader.next();
    await new Promise((resolve) => setImmediate(resolve));
    await actor.append(events(2), 'public'); // 3, 4: handed over
    accept = false;
    await actor.append(events(2), 'public'); // 5, 6: refused, and more than maxBuffered
    await guard(parked, () => 'the overflow did not wake the generator');
    await reader.pullUntil(() => reader.offsets.includes(6));
    expect(handed).toEqual([3, 4]);
    expect(reader.offsets).toEqual([1, 2, 5, 6]);
    await reader.close();
  });

  it('`live` is not asked while the reader is behind: a replay and a queue come through the generator in order', async () => {
    const actor = await newActor(open);
    await actor.append(events(5), 'public'); // 1..6
    let asked = 0;
    const reader = new Reader(actor, { afterOffset: 0, pageSize: 2, live: () => (asked++, true) });
    await reader.pull(); // [1, 2]; the replay is not finished
    await actor.append(events(2), 'public'); // 7, 8: published while the reader is mid-replay
    await reader.pullUntil(() => reader.offsets.includes(8));
    expect(reader.offsets).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(asked).toBe(0);
    await reader.close();
  });

  it('a cursor at or past the head waits for what comes next', async () => {
    const actor = await newActor(open);
    await actor.append(events(3), 'public'); // 1..4
    const reader = new Reader(actor, { afterOffset: 6 });
    const first = reader.pull();
    await actor.append(events(4), 'public'); // 5..8
    await first;
    await reader.pullUntil(() => reader.offsets.includes(8));
    expect(reader.offsets).toEqual([7, 8]);
    await reader.close();
  });
});
