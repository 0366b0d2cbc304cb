/**
 * The live connections of every stream of one server (protocol §19). Each stream's connections
 * live beside its actor (the single writer), keyed by connection key; the actor's
 * `connectionKeys` set mirrors those keys so that subscription configure refuses them, as opening
 * refuses subscription keys (protocol §9.2, §19.2). An actor holding connections is never evicted
 * (it is not idle), so the per-actor sets can hang off the actor object itself.
 */
import {
  OpenConnectionOptionsSchema,
  parseOrThrow,
  type ConnectionClosed,
  type ConnectionCloseReason,
  type ConnectionRuntimeState,
  type OpenConnectionOptions,
} from '@rivulet/contract';
import type { Clock, Random } from '../../ports/clock.js';
import type { Timer } from '../../ports/timer.js';
import type { StreamActor } from '../actor.js';
import { LiveConnection, type ConnectionOwner } from './connection.js';
import { defaultConnectionLimits, type BatchCallback, type ConnectionLimits, type ConnectionSpec } from './connection-spec.js';
import { checkCoordinates, openingFacts, resolveSpec } from './open.js';

/** What `openConnection` answers (the RPC edge wraps it in an RpcTarget). */
export interface ConnectionHandle {
  readonly connectionKey: string;
  /** The stream head once open: the offset of its connection-opened fact. */
  readonly streamMaxOffset: number;
  /** Resolves when the connection closes, with the reason. */
  readonly closed: Promise<ConnectionClosed>;
  readonly isClosed: boolean;
  /** Closes it (reason `requested` by default); answers false when it was already closed. */
  close(reason?: ConnectionCloseReason, error?: string): Promise<boolean>;
}

export interface ConnectionHubOptions {
  clock: Clock;
  random: Random;
  /** waitForEvent's timeout; a replaying connection's yield to pending I/O. */
  timer: Timer;
  limits?: Partial<ConnectionLimits>;
  log?(message: string, error?: unknown): void;
}

export interface OpenExtras {
  kind?: ConnectionSpec['kind'];
  /** Recorded in connection-opened (waitForEvent). */
  timeoutMs?: number;
}

/** The connections of one stream. */
class StreamConnections implements ConnectionOwner {
  readonly byKey = new Map<string, LiveConnection>();

  constructor(
    private readonly actor: StreamActor,
    private readonly hub: ConnectionHub,
  ) {}

  hold(connection: LiveConnection): void {
    this.byKey.set(connection.key, connection);
    this.actor.connectionKeys.add(connection.key);
    this.hub.track(connection, true);
  }

  release(connection: LiveConnection): void {
    this.hub.track(connection, false);
    if (this.byKey.get(connection.key) !== connection) return;
    this.byKey.delete(connection.key);
    this.actor.connectionKeys.delete(connection.key);
  }

  log(message: string, error?: unknown): void {
    this.hub.log(message, error);
  }
}

export class ConnectionHub {
  private readonly streams = new WeakMap<StreamActor, StreamConnections>();
  private readonly open = new Set<LiveConnection>();
  readonly limits: ConnectionLimits;
  readonly timer: Timer;

  constructor(private readonly options: ConnectionHubOptions) {
    this.timer = options.timer;
    this.limits = { ...defaultConnectionLimits, ...options.limits };
  }

  /** Open connections on every stream. */
  get size(): number {
    return this.open.size;
  }

  /** @internal bookkeeping of StreamConnections. */
  track(connection: LiveConnection, open: boolean): void {
    if (open) this.open.add(connection);
    else this.open.delete(connection);
  }

  log(message: string, error?: unknown): void {
    this.options.log?.(message, error);
  }

  private of(actor: StreamActor): StreamConnections {
    let set = this.streams.get(actor);
    if (!set) {
      set = new StreamConnections(actor, this);
      this.streams.set(actor, set);
    }
    return set;
  }

  /** The connection holding `key` on this stream, if any. */
  get(actor: StreamActor, key: string): LiveConnection | undefined {
    return this.streams.get(actor)?.byKey.get(key);
  }

  /** runtime.connections of a stream (protocol §19.6). */
  runtime(actor: StreamActor): Record<string, ConnectionRuntimeState> {
    const out: Record<string, ConnectionRuntimeState> = {};
    const set = this.streams.get(actor);
    if (!set) return out;
    const head = actor.durableHead;
    for (const [key, connection] of set.byKey) out[key] = connection.runtime(head);
    return out;
  }

  /**
   * Opens a connection (protocol §19.1, §19.5). Everything is validated before anything is
   * replaced; the facts (`connection-closed {reason: "replaced"}` for a key already held, then
   * `connection-opened`) commit in one append, and the key changes hands inside that append's
   * synchronous section. Answers once the facts are durable; the first batch follows at once.
   */
  async openConnection(
    actor: StreamActor,
    options: OpenConnectionOptions,
    callback: BatchCallback,
    extras: OpenExtras = {},
  ): Promise<ConnectionHandle> {
    return (await this.openInternal(actor, options, callback, extras)).handle;
  }

  /** openConnection, also answering the connection itself (waitForEvent reads its counters). */
  async openInternal(
    actor: StreamActor,
    rawOptions: OpenConnectionOptions,
    callback: BatchCallback,
    extras: OpenExtras = {},
  ): Promise<{ connection: LiveConnection; handle: ConnectionHandle }> {
    const options = parseOrThrow(OpenConnectionOptionsSchema, rawOptions, 'options');
    const kind = extras.kind ?? 'live';
    const spec = resolveSpec(options, kind, () => `${kind === 'wait' ? 'wait' : 'connection'}:${this.options.random.uuid()}`, actor.expressionBudget);
    const set = this.of(actor);
    const connection = new LiveConnection(actor, spec, callback, set, this.limits, this.options.clock.now(), this.timer);
    let replaced: LiveConnection | undefined;
    let attached = false;
    try {
      await actor.append(
        (state) => {
          checkCoordinates(actor.path, state, actor.head, options, spec.key);
          replaced = set.byKey.get(spec.key);
          return openingFacts(spec, options, replaced !== undefined, extras.timeoutMs === undefined ? {} : { timeoutMs: extras.timeoutMs });
        },
        'platform',
        {
          committed: (decision) => {
            // The same synchronous section as the plan above: nothing ran in between.
            if (replaced) void replaced.close('replaced');
            set.hold(connection);
            connection.attach(decision.results);
            attached = true;
          },
        },
      );
    } catch (error) {
      if (attached) void connection.close('delivery-failed', 'the opening facts could not be stored', { fact: false });
      throw error;
    }
    connection.start();
    return { connection, handle: handleOf(connection) };
  }

  /** Closes every open connection (server shutdown), recording why. */
  async closeAll(reason: ConnectionCloseReason): Promise<void> {
    await Promise.all([...this.open].map((connection) => connection.close(reason)));
  }
}

function handleOf(connection: LiveConnection): ConnectionHandle {
  return {
    connectionKey: connection.key,
    streamMaxOffset: connection.openedAt,
    closed: connection.closed,
    get isClosed() {
      return connection.isClosed;
    },
    async close(reason = 'requested', error) {
      if (connection.isClosed) return false;
      await connection.close(reason, error);
      return true;
    },
  };
}
