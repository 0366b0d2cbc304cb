/**
 * The timer port over the Durable Object alarm (ports/timer.ts). A Durable Object has exactly one
 * alarm and hosts exactly one stream, whose sender owns it: the latest `create` takes the alarm
 * over, and handles of an earlier owner (a sender closed when the engine was rebuilt) no longer
 * touch it. The Durable Object's `alarm()` handler calls `ring()`, which fires the owner.
 *
 * The alarm is stored with the object's storage, so it survives eviction and restarts: a stream
 * whose deliveries are owed (retry times, in-flight deadlines) wakes itself. `keepAwake` lets the
 * host add a floor the engine does not know about: while a delivery is in flight the host wants
 * an alarm no later than its deadline, so that a delivery interrupted by an eviction is retried.
 * Writes are skipped when the alarm already stands at the requested time, or no later than a
 * floor that alone asks for it.
 */
import type { AlarmFactory, StreamAlarm } from '../../ports/timer.js';
import type { DoStorageApi } from './do-api.js';

export interface DoAlarmOptions {
  /** An upper bound for the next alarm (ms since epoch), or null: consulted on every set and clear. */
  keepAwake?(): number | null;
  log?(message: string, error: unknown): void;
}

export class DurableObjectAlarms implements AlarmFactory {
  private owner = 0;
  private fire: (() => void) | undefined;
  /** The time the stored alarm stands at, null when none, undefined when unknown. */
  private armedAt: number | null | undefined = undefined;

  constructor(
    private readonly storage: Pick<DoStorageApi, 'setAlarm' | 'deleteAlarm'>,
    private readonly options: DoAlarmOptions = {},
  ) {}

  create(fire: () => void): StreamAlarm {
    const id = ++this.owner;
    this.fire = fire;
    return {
      set: (atMs) => {
        if (id === this.owner) this.apply(atMs);
      },
      clear: () => {
        if (id === this.owner) this.apply(null);
      },
    };
  }

  /** The Durable Object's alarm() handler: the stored alarm is spent; fire the current owner. */
  ring(): void {
    this.armedAt = null;
    this.fire?.();
  }

  /** The stored alarm was removed behind this adapter's back (the object's storage was erased). */
  forget(): void {
    this.armedAt = null;
  }

  private apply(wanted: number | null): void {
    const floor = this.options.keepAwake?.() ?? null;
    const at = wanted === null ? floor : floor === null ? wanted : Math.min(wanted, floor);
    if (at === this.armedAt) return;
    // Only the floor asks for this alarm: one that already stands no later will do (it rings first,
    // and the sender re-arms), which saves a storage write on every check while deliveries run.
    if (at !== null && at === floor && (wanted === null || floor < wanted) && typeof this.armedAt === 'number' && this.armedAt <= at) return;
    this.armedAt = at;
    const done = at === null ? this.storage.deleteAlarm() : this.storage.setAlarm(Math.max(0, Math.round(at)));
    done.catch((error: unknown) => {
      this.armedAt = undefined;
      this.options.log?.('could not store the stream alarm', error);
    });
  }
}
