import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defaultEngineConfig } from './config.js';
import type { ActorDeps, StreamActor } from './actor.js';
import { StreamRegistry } from './registry.js';
import type { Timer } from '../ports/timer.js';

/** The registry as it was: every get moves the actor to the end of the order, then evicts. */
class ReferenceRegistry {
  private readonly actors = new Map<string, { path: string }>();
  constructor(
    private readonly maxActors: number,
    private readonly canEvict: (path: string) => boolean,
  ) {}
  private period = 0;
  private readonly usedIn = new Map<string, number>();
  get(path: string): { path: string } {
    let actor = this.actors.get(path);
    if (actor) this.actors.delete(path);
    else actor = { path };
    this.actors.set(path, actor);
    this.usedIn.set(path, this.period);
    if (this.actors.size > this.maxActors) {
      for (const [key, a] of this.actors) {
        if (this.actors.size <= this.maxActors) break;
        if (this.canEvict(a.path)) this.actors.delete(key);
      }
    }
    return actor;
  }
  /** The idle sweep, judged on every actor (the registry stops at the first one used this period). */
  sweep(): void {
    for (const [key, a] of this.actors) if (this.usedIn.get(key) !== this.period && this.canEvict(a.path)) this.actors.delete(key);
    this.period++;
  }
  order(): string[] {
    return [...this.actors.keys()];
  }
}

/** A timer the test fires by hand; at most one is pending in these tests. */
class ManualTimer implements Timer {
  pending: Array<{ delayMs: number; fn: () => void; cancelled: boolean }> = [];
  set(delayMs: number, fn: () => void) {
    const t = { delayMs, fn, cancelled: false };
    this.pending.push(t);
    return () => {
      t.cancelled = true;
    };
  }
  get armed(): number[] {
    return this.pending.filter((t) => !t.cancelled).map((t) => t.delayMs);
  }
  fire(): void {
    const due = this.pending.filter((t) => !t.cancelled);
    this.pending = [];
    expect(due.length).toBe(1);
    due[0]!.fn();
  }
}

const deps = { store: {}, clock: {}, random: {}, config: defaultEngineConfig } as unknown as ActorDeps;
const depsWith = (timer: Timer) => ({ ...deps, timer }) as ActorDeps;

describe('StreamRegistry', () => {
  it('keeps the same actors in the same least-recently-used order as moving every one it is asked for', () => {
    const path = fc.constantFrom('/a', '/b', '/c', '/d', '/e');
    fc.assert(
      fc.property(fc.array(path, { maxLength: 60 }), fc.integer({ min: 1, max: 4 }), fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }), (gets, max, evictable) => {
        let step = 0;
        const canEvict = (p: string) => evictable[(step * 7 + p.charCodeAt(1)) % 64]!;
        const registry = new StreamRegistry(deps, { maxActors: max, canEvict: (actor) => canEvict(actor.path) });
        const reference = new ReferenceRegistry(max, canEvict);
        const seen = new Map<string, StreamActor>();
        const seenReference = new Map<string, object>();
        for (const p of gets) {
          step++;
          const actor = registry.get(null, p);
          const model = reference.get(p);
          // A new actor exactly when the reference made a new one.
          expect(actor === seen.get(p)).toBe(model === seenReference.get(p));
          seen.set(p, actor);
          seenReference.set(p, model);
          expect([...registry.loaded()].map((a) => a.path)).toEqual(reference.order());
        }
      }),
      { numRuns: 500 },
    );
  });

  it('sweeps like the reference when sweeps fall between the gets', () => {
    const op = fc.oneof(fc.constantFrom('/a', '/b', '/c', '/d', '/e'), fc.constant('sweep'));
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), fc.integer({ min: 1, max: 6 }), fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }), (ops, max, evictable) => {
        let step = 0;
        const canEvict = (p: string) => evictable[(step * 7 + p.charCodeAt(1)) % 64]!;
        const timer = new ManualTimer();
        const registry = new StreamRegistry(depsWith(timer), { maxActors: max, idleSweepMs: 1000, canEvict: (actor) => canEvict(actor.path) });
        const reference = new ReferenceRegistry(max, canEvict);
        for (const o of ops) {
          step++;
          if (o === 'sweep') {
            // The registry's timer is armed exactly while it holds actors.
            expect(timer.armed.length).toBe(reference.order().length > 0 ? 1 : 0);
            if (timer.armed.length) timer.fire();
            reference.sweep();
          } else {
            registry.get(null, o);
            reference.get(o);
          }
          expect([...registry.loaded()].map((a) => a.path)).toEqual(reference.order());
        }
      }),
      { numRuns: 500 },
    );
  });

  it('drops an actor unused for one whole sweep period, and keeps one used within it', () => {
    const timer = new ManualTimer();
    const evicted: string[] = [];
    const registry = new StreamRegistry(depsWith(timer), { idleSweepMs: 30_000, onEvict: (actor) => evicted.push(actor.path) });
    expect(timer.armed).toEqual([]); // nothing loaded, nothing armed
    const a = registry.get(null, '/a');
    expect(timer.armed).toEqual([30_000]);
    const b = registry.get(null, '/b');
    timer.fire(); // both were used in this period
    expect(evicted).toEqual([]);
    expect(registry.get(null, '/b')).toBe(b); // still loaded, and used in this period
    timer.fire(); // /a unused for a whole period; /b used in it
    expect(evicted).toEqual(['/a']);
    timer.fire();
    expect(evicted).toEqual(['/a', '/b']);
    expect(timer.armed).toEqual([]); // empty again: no timer left
    const again = registry.get(null, '/a');
    expect(again).not.toBe(a); // a new actor, loaded again from storage
    expect(timer.armed).toEqual([30_000]);
  });

  it('keeps an actor that may not go, and drops it at the first sweep after it may', () => {
    const timer = new ManualTimer();
    let busy = true;
    const registry = new StreamRegistry(depsWith(timer), { idleSweepMs: 1000, canEvict: () => !busy });
    const a = registry.get(null, '/a');
    timer.fire();
    timer.fire();
    timer.fire();
    expect([...registry.loaded()]).toEqual([a]);
    expect(timer.armed).toEqual([1000]);
    busy = false;
    timer.fire();
    expect([...registry.loaded()]).toEqual([]);
  });

  it('tells afterSweep how many actors each sweep dropped and how many stay', () => {
    const timer = new ManualTimer();
    const counts: Array<[number, number]> = [];
    let busy = true;
    const registry = new StreamRegistry(depsWith(timer), {
      idleSweepMs: 1000,
      canEvict: (actor) => actor.path !== '/busy' || !busy,
      afterSweep: (dropped, loaded) => counts.push([dropped, loaded]),
    });
    for (const path of ['/a', '/b', '/busy']) registry.get(null, path);
    timer.fire(); // all used in this period
    registry.get(null, '/c');
    timer.fire(); // /a and /b go, /busy may not, /c was used
    busy = false;
    timer.fire(); // /busy and /c
    expect(counts).toEqual([
      [0, 3],
      [2, 2],
      [2, 0],
    ]);
    expect([...registry.loaded()]).toEqual([]);
  });

  it('sets no timer without idleSweepMs, and none after close', () => {
    const timer = new ManualTimer();
    const plain = new StreamRegistry(depsWith(timer));
    plain.get(null, '/a');
    expect(timer.armed).toEqual([]);
    const swept = new StreamRegistry(depsWith(timer), { idleSweepMs: 1000 });
    swept.get(null, '/a');
    expect(timer.armed).toEqual([1000]);
    swept.close();
    expect(timer.armed).toEqual([]);
    swept.get(null, '/b');
    expect(timer.armed).toEqual([]);
  });

  it('takes a sweep period of 1 ms or more, in whole milliseconds', () => {
    expect(() => new StreamRegistry(deps, { idleSweepMs: 0 })).toThrow('idleSweepMs must be a positive integer, got 0');
    expect(() => new StreamRegistry(deps, { idleSweepMs: 1.5 })).toThrow('idleSweepMs must be a positive integer, got 1.5');
    expect(() => new StreamRegistry(deps, { idleSweepMs: 1 })).not.toThrow();
  });
});
