/**
 * The directory of stream actors of one database (the Node host keeps every stream in one SQLite
 * file). Actors are created on first use and kept in least-recently-used order; idle ones (no live
 * reader, nothing uncommitted) beyond `maxActors` are dropped and reload from storage when touched.
 *
 * With `idleSweepMs`, actors also go when they have not been asked for over one whole sweep period
 * (so between one and two periods after their last use), whatever their number: a server holding
 * many quiet streams keeps in memory only those in use (architecture.md, "Actors come and go;
 * delivery does not"). The sweep is a one-shot timer armed only while actors are loaded, so a
 * registry with none sets no timer. Each entry remembers the sweep period it was last used in;
 * since every use moves it to the end of the order, the periods never decrease along the order and
 * a sweep stops at the first entry used in the current period.
 */
import type { CancelTimer } from '../ports/timer.js';
import { StreamActor, type ActorDeps } from './actor.js';

interface Entry {
  readonly actor: StreamActor;
  /** The sweep period of its last use. */
  period: number;
}

export interface RegistryOptions {
  maxActors?: number;
  /** Drop actors unused for a whole period of this many ms (off when absent). */
  idleSweepMs?: number;
  canEvict?(actor: StreamActor): boolean;
  onEvict?(actor: StreamActor): void;
  /**
   * Told after each idle sweep how many actors it dropped (none included) and how many stay
   * loaded. What the dropped ones held is garbage from then on, which an idle process may not
   * collect for a long time: the Node host asks for a collection after a large sweep
   * (hosts/node/heap-release.ts).
   */
  afterSweep?(dropped: number, loaded: number): void;
}

export class StreamRegistry {
  private readonly actors = new Map<string, Entry>();
  /** The entry set into `actors` last: the end of its least-recently-used order while it is there. */
  private newest: Entry | undefined;
  private period = 0;
  private cancelSweep: CancelTimer | undefined;
  private closed = false;

  constructor(
    private readonly deps: ActorDeps,
    private readonly options: RegistryOptions = {},
  ) {
    const every = options.idleSweepMs;
    if (every !== undefined && !(Number.isInteger(every) && every > 0)) throw new Error(`idleSweepMs must be a positive integer, got ${every}`);
  }

  private get maxActors(): number {
    return this.options.maxActors ?? 10_000;
  }

  private static key(projectId: string | null, path: string): string {
    return `${projectId ?? ''}\u0000${path}`;
  }

  get(projectId: string | null, path: string): StreamActor {
    const key = StreamRegistry.key(projectId, path);
    let entry = this.actors.get(key);
    // The entry set last is the most recently used already (a stream appended to again and again).
    if (entry !== this.newest || entry === undefined) {
      if (entry) {
        this.actors.delete(key);
      } else {
        entry = { actor: new StreamActor(projectId, path, this.deps), period: this.period };
      }
      this.actors.set(key, entry);
      this.newest = entry;
      this.armSweep();
    }
    entry.period = this.period;
    if (this.actors.size > this.maxActors) this.evict();
    return entry.actor;
  }

  /** Actors currently in memory (for post-commit sweeps and shutdown). */
  *loaded(): IterableIterator<StreamActor> {
    for (const entry of this.actors.values()) yield entry.actor;
  }

  /** Stops the idle sweep (the actors stay; shutdown deals with them). */
  close(): void {
    this.closed = true;
    this.cancelSweep?.();
    this.cancelSweep = undefined;
  }

  private evictable(entry: Entry): boolean {
    return entry.actor.idle && (this.options.canEvict?.(entry.actor) ?? true);
  }

  private drop(key: string, entry: Entry): void {
    this.actors.delete(key);
    if (this.newest === entry) this.newest = undefined;
    this.options.onEvict?.(entry.actor);
  }

  private evict(): void {
    for (const [key, entry] of this.actors) {
      if (this.actors.size <= this.maxActors) return;
      if (this.evictable(entry)) this.drop(key, entry);
    }
  }

  private armSweep(): void {
    const every = this.options.idleSweepMs;
    if (every === undefined || this.cancelSweep || this.closed) return;
    this.cancelSweep = this.deps.timer.set(every, () => {
      this.cancelSweep = undefined;
      this.sweep();
    });
  }

  /** Drops every evictable actor not used since the previous sweep; re-arms while actors remain. */
  private sweep(): void {
    let dropped = 0;
    for (const [key, entry] of this.actors) {
      if (entry.period === this.period) break;
      if (this.evictable(entry)) {
        this.drop(key, entry);
        dropped++;
      }
    }
    this.period++;
    if (this.actors.size > 0) this.armSweep();
    this.options.afterSweep?.(dropped, this.actors.size);
  }
}
