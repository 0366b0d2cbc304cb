/**
 * Live connections in-process (engine/connections): MemoryStorage, the actor registry and one
 * ConnectionHub, as engine/compose.ts composes them but without delivery, HTTP or RPC. `Recorder`
 * is a callback that records every batch and can be held (a slow consumer) or made to fail.
 */
import { EventType, type CommittedEvent, type ConnectionBatch, type EventInput } from '@rivulet/contract';
import { MemoryStorage } from '../../src/adapters/memory/memory-storage.js';
import { checkInput } from '../../src/core/append-input.js';
import type { StreamActor } from '../../src/engine/actor.js';
import { defaultEngineConfig } from '../../src/engine/config.js';
import { ConnectionHub, type ConnectionLimits } from '../../src/engine/connections/index.js';
import { StreamRegistry } from '../../src/engine/registry.js';
import { openSchema } from '../../src/engine/schema.js';
import { StreamStore } from '../../src/engine/stream-store.js';
import { systemTimer } from '../../src/ports/timer.js';

export { EventType };

/** Polls `probe` until it answers something other than undefined/false; fails after the deadline. */
export async function waitFor<T>(probe: () => T | undefined | false, what: string | (() => string), timeoutMs = 3000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

export interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

export function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A callback that records batches; `hold()` makes the next calls wait until `release()`. */
export class Recorder {
  readonly batches: ConnectionBatch[] = [];
  private gate: Deferred | null = null;
  /** Calls that arrived while held (they have not returned yet). */
  waiting = 0;
  failWith: Error | null = null;

  readonly callback = async (batch: ConnectionBatch): Promise<void> => {
    this.batches.push(batch);
    if (this.failWith) throw this.failWith;
    while (this.gate) {
      this.waiting++;
      await this.gate.promise;
      this.waiting--;
    }
  };

  hold(): void {
    this.gate ??= deferred();
  }

  release(): void {
    const gate = this.gate;
    this.gate = null;
    gate?.resolve();
  }

  get events(): CommittedEvent[] {
    return this.batches.flatMap((b) => b.events);
  }

  get offsets(): number[] {
    return this.events.map((e) => e.offset);
  }

  /** Offsets of delivered events that are not platform facts (created, connection-opened/-closed). */
  get dataOffsets(): number[] {
    return this.events.filter((e) => !isConnectionFact(e) && e.type !== EventType.created).map((e) => e.offset);
  }
}

export function isConnectionFact(event: CommittedEvent): boolean {
  return event.type === EventType.connectionOpened || event.type === EventType.connectionClosed;
}

export class ConnectionsHarness {
  readonly store: StreamStore;
  readonly registry: StreamRegistry;
  readonly hub: ConnectionHub;
  readonly logs: string[] = [];
  private ids = 0;

  constructor(
    readonly storage: MemoryStorage,
    limits: Partial<ConnectionLimits> = {},
  ) {
    openSchema(storage);
    this.store = new StreamStore(storage);
    const random = { next: () => 0.5, uuid: () => `00000000-0000-4000-8000-${(++this.ids).toString(16).padStart(12, '0')}` };
    const clock = { now: () => Date.now() };
    this.registry = new StreamRegistry({ store: this.store, clock, random, timer: systemTimer, config: defaultEngineConfig });
    this.hub = new ConnectionHub({ clock, random, timer: systemTimer, limits, log: (message, error) => this.logs.push(`${message}: ${String(error)}`) });
  }

  static async create(limits: Partial<ConnectionLimits> = {}): Promise<ConnectionsHarness> {
    return new ConnectionsHarness(await MemoryStorage.create(), limits);
  }

  actor(path: string): StreamActor {
    return this.registry.get('proj', path);
  }

  append(path: string, ...events: EventInput[]): Promise<CommittedEvent[]> {
    return this.actor(path).append(
      events.map((e, i) => checkInput(e, 'public', i)),
      'public',
    );
  }

  /** Every event of a stream (ephemeral included). */
  events(path: string): CommittedEvent[] {
    const out: CommittedEvent[] = [];
    for (;;) {
      const page = this.actor(path).read({ afterOffset: out.at(-1)?.offset ?? 0, limit: 500, includeEphemeral: true });
      out.push(...page.events);
      if (page.events.length < 500) return out;
    }
  }

  facts(path: string): CommittedEvent[] {
    return this.events(path).filter(isConnectionFact);
  }

  close(): void {
    this.storage.close();
  }
}
