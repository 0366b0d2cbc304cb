/**
 * The directory of stream actors of one database (the Node host keeps every stream in one SQLite
 * file). Actors are created on first use and kept in least-recently-used order; idle ones (no live
 * reader, nothing uncommitted) beyond `maxActors` are dropped and reload from storage when touched.
 */
import { StreamActor, type ActorDeps } from './actor.js';

export class StreamRegistry {
  private readonly actors = new Map<string, StreamActor>();
  /** The actor set into `actors` last: the end of its least-recently-used order while it is there. */
  private newest: StreamActor | undefined;

  constructor(
    private readonly deps: ActorDeps,
    private readonly options: { maxActors?: number; canEvict?(actor: StreamActor): boolean; onEvict?(actor: StreamActor): void } = {},
  ) {}

  private get maxActors(): number {
    return this.options.maxActors ?? 10_000;
  }

  private static key(projectId: string | null, path: string): string {
    return `${projectId ?? ''}\u0000${path}`;
  }

  get(projectId: string | null, path: string): StreamActor {
    const key = StreamRegistry.key(projectId, path);
    let actor = this.actors.get(key);
    // The actor set last is the most recently used already (a stream appended to again and again).
    if (actor !== this.newest || actor === undefined) {
      if (actor) {
        this.actors.delete(key);
      } else {
        actor = new StreamActor(projectId, path, this.deps);
      }
      this.actors.set(key, actor);
      this.newest = actor;
    }
    if (this.actors.size > this.maxActors) this.evict();
    return actor;
  }

  /** Actors currently in memory (for post-commit sweeps and shutdown). */
  loaded(): IterableIterator<StreamActor> {
    return this.actors.values();
  }

  private evict(): void {
    for (const [key, actor] of this.actors) {
      if (this.actors.size <= this.maxActors) return;
      if (actor.idle && (this.options.canEvict?.(actor) ?? true)) {
        this.actors.delete(key);
        this.options.onEvict?.(actor);
      }
    }
  }
}
