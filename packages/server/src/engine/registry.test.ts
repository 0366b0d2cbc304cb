import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defaultEngineConfig } from './config.js';
import type { ActorDeps, StreamActor } from './actor.js';
import { StreamRegistry } from './registry.js';

/** The registry as it was: every get moves the actor to the end of the order, then evicts. */
class ReferenceRegistry {
  private readonly actors = new Map<string, { path: string }>();
  constructor(
    private readonly maxActors: number,
    private readonly canEvict: (path: string) => boolean,
  ) {}
  get(path: string): { path: string } {
    let actor = this.actors.get(path);
    if (actor) this.actors.delete(path);
    else actor = { path };
    this.actors.set(path, actor);
    if (this.actors.size > this.maxActors) {
      for (const [key, a] of this.actors) {
        if (this.actors.size <= this.maxActors) break;
        if (this.canEvict(a.path)) this.actors.delete(key);
      }
    }
    return actor;
  }
  order(): string[] {
    return [...this.actors.keys()];
  }
}

const deps = { store: {}, clock: {}, random: {}, config: defaultEngineConfig } as unknown as ActorDeps;

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
});
