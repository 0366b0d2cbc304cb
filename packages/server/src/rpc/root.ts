/**
 * The ITX root of an RPC session (protocol §18.2): `streams.get(path)` with the stream methods,
 * `workers.register(name, target)` / `workers.get(name)`. Everything is scoped to one project, the
 * caller's (or, for deliveries, the source stream's): nothing here can reach another project.
 * Arguments arrive from an untrusted peer and are validated with the same schemas as HTTP bodies.
 * Only prototype methods and getters are reachable over RPC; state lives in #private fields.
 */
import {
  CallableNameSchema,
  EventInputSchema,
  ResumeSubscriptionBodySchema,
  RivuletError,
  RpcListSubscriptionsOptionsSchema,
  RpcReadOptionsSchema,
  SubscriptionAdminLimits,
  SetSubscriptionCursorBodySchema,
  SubscribeToEventsFromBodySchema,
  UnsubscribeFromEventsBodySchema,
  canonicalizePath,
  parseOrThrow,
  type CommittedEvent,
} from '@rivulet/contract';
import { RpcTarget } from 'capnweb';
import type { CallableRegistry, HeldStub } from '../engine/itx/worker-registry.js';
import type { StreamService } from '../engine/service.js';
import { openRpcConnection, rpcWaitForEvent, type LiveConnectionHandle } from './connections.js';
import type { SessionClosers } from './session-closers.js';

export interface ItxDeps {
  service: StreamService;
  workers: CallableRegistry;
  /** What ends with an RPC session (live connections, waits; protocol §19); without it, no live connections. */
  sessions?: SessionClosers | undefined;
  /** Processor hosts (`processors.register`, protocol §20); absent on a host that serves none. */
  processors?: CallableRegistry | undefined;
}

export interface ItxScope {
  projectId: string | null;
  /** The RPC session registrations belong to; null for the root deliveries evaluate against. */
  sessionId: string | null;
  deps: ItxDeps;
}

export class StreamApi extends RpcTarget {
  readonly #scope: ItxScope;
  readonly #path: string;

  constructor(scope: ItxScope, path: string) {
    super();
    this.#scope = scope;
    this.#path = path;
  }

  get path(): string {
    return this.#path;
  }

  async append(...events: unknown[]): Promise<CommittedEvent[]> {
    if (events.length === 0) throw new RivuletError('INVALID_INPUT', 'append needs at least one event');
    const inputs = events.map((e, i) => parseOrThrow(EventInputSchema, e, `events[${i}]`));
    return this.#scope.deps.service.append(this.#scope.projectId, this.#path, inputs);
  }

  async getEvents(options: unknown = {}) {
    const o = parseOrThrow(RpcReadOptionsSchema, options ?? {}, 'options');
    const result = await this.#scope.deps.service.read(this.#scope.projectId, this.#path, {
      afterOffset: o.afterOffset ?? 0,
      beforeOffset: o.beforeOffset,
      limit: o.limit ?? 500,
      includeEphemeral: o.includeEphemeral ?? false,
      eventTypes: o.eventTypes,
    });
    return {
      streamId: result.streamId,
      streamMaxOffset: result.streamMaxOffset,
      events: result.events.map((e) => JSON.parse(e.json) as CommittedEvent),
    };
  }

  state() {
    return this.#scope.deps.service.state(this.#scope.projectId, this.#path);
  }

  async runtimeState() {
    return (await this.#scope.deps.service.state(this.#scope.projectId, this.#path)).runtime;
  }

  subscribeToEventsFrom(body: unknown) {
    const b = parseOrThrow(SubscribeToEventsFromBodySchema, body, 'body');
    return this.#scope.deps.service.subscribeToEventsFrom(this.#scope.projectId, this.#path, b);
  }

  unsubscribeFromEvents(body: unknown) {
    const b = parseOrThrow(UnsubscribeFromEventsBodySchema, body, 'body');
    return this.#scope.deps.service.unsubscribeFromEvents(this.#scope.projectId, this.#path, b);
  }

  setSubscriptionCursor(body: unknown) {
    const b = parseOrThrow(SetSubscriptionCursorBodySchema, body, 'body');
    return this.#scope.deps.service.setSubscriptionCursor(this.#scope.projectId, this.#path, b);
  }

  resumeSubscription(body: unknown) {
    const b = parseOrThrow(ResumeSubscriptionBodySchema, body, 'body');
    return this.#scope.deps.service.resumeSubscription(this.#scope.projectId, this.#path, b);
  }

  setSubscriptionCursorAndResume(body: unknown) {
    const b = parseOrThrow(SetSubscriptionCursorBodySchema, body, 'body');
    return this.#scope.deps.service.setSubscriptionCursorAndResume(this.#scope.projectId, this.#path, b);
  }

  /** A live connection (protocol §19): `options.processEventBatch` is called with each batch. */
  openConnection(options: unknown): Promise<LiveConnectionHandle> {
    return openRpcConnection(this.#connectionContext(), options);
  }

  /** The first matching event after `afterOffset`, or live (protocol §19.7); TIMEOUT after `timeoutMs`. */
  waitForEvent(body: unknown) {
    return rpcWaitForEvent(this.#connectionContext(), body);
  }

  #connectionContext() {
    const { deps, projectId, sessionId } = this.#scope;
    return { service: deps.service, projectId, sessionId, sessions: deps.sessions, path: this.#path };
  }

  async destroy(): Promise<{ destroyed: true }> {
    await this.#scope.deps.service.destroy(this.#scope.projectId, this.#path);
    return { destroyed: true };
  }
}

export class StreamsApi extends RpcTarget {
  readonly #scope: ItxScope;

  constructor(scope: ItxScope) {
    super();
    this.#scope = scope;
  }

  get(path: unknown): StreamApi {
    if (typeof path !== 'string') throw new RivuletError('INVALID_INPUT', 'streams.get takes a stream path (a string)');
    return new StreamApi(this.#scope, canonicalizePath(path));
  }

  list(options: unknown = {}) {
    const o = (options ?? {}) as { prefix?: unknown; after?: unknown; limit?: unknown };
    const prefix = typeof o.prefix === 'string' ? canonicalizePath(o.prefix) : '/';
    const after = typeof o.after === 'string' ? canonicalizePath(o.after) : undefined;
    const limit = typeof o.limit === 'number' && Number.isSafeInteger(o.limit) && o.limit > 0 ? Math.min(o.limit, 10_000) : 1000;
    return this.#scope.deps.service.list(this.#scope.projectId, { prefix, after, limit });
  }
}

/** The handle answered by `register`: `unregister()` ends the registration (disposing it does not). */
export class Registration extends RpcTarget {
  readonly #unregister: () => boolean;

  constructor(unregister: () => boolean) {
    super();
    this.#unregister = unregister;
  }

  unregister(): { unregistered: boolean } {
    return { unregistered: this.#unregister() };
  }
}

export class CallablesApi extends RpcTarget {
  readonly #scope: ItxScope;
  readonly #registry: CallableRegistry;

  constructor(scope: ItxScope, registry: CallableRegistry) {
    super();
    this.#scope = scope;
    this.#registry = registry;
  }

  register(name: unknown, target: unknown): Registration {
    const n = parseOrThrow(CallableNameSchema, name, 'name');
    if (this.#scope.sessionId === null) {
      throw new RivuletError('FORBIDDEN', `${this.#registry.kind}s are registered by RPC sessions, not by delivery expressions`);
    }
    if (!isStub(target)) {
      throw new RivuletError('INVALID_INPUT', `register takes an object or function passed by reference (an RpcTarget or a function)`);
    }
    return new Registration(this.#registry.register(this.#scope.projectId, n, target, this.#scope.sessionId));
  }

  get(name: unknown): HeldStub {
    const n = parseOrThrow(CallableNameSchema, name, 'name');
    const stub = this.#registry.get(this.#scope.projectId, n);
    if (!stub) {
      throw new RivuletError('UNAVAILABLE', `no ${this.#registry.kind} "${n}" is connected in this project`, {
        [this.#registry.kind]: n,
      });
    }
    return stub;
  }

  has(name: unknown): boolean {
    return typeof name === 'string' && this.#registry.has(this.#scope.projectId, name);
  }
}

function isStub(value: unknown): value is HeldStub {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { dup?: unknown }).dup === 'function' &&
    typeof (value as Record<symbol, unknown>)[Symbol.dispose] === 'function'
  );
}

export class ItxRoot extends RpcTarget {
  readonly #scope: ItxScope;

  constructor(scope: ItxScope) {
    super();
    this.#scope = scope;
  }

  get streams(): StreamsApi {
    return new StreamsApi(this.#scope);
  }

  get workers(): CallablesApi {
    return new CallablesApi(this.#scope, this.#scope.deps.workers);
  }

  /** The project's subscriptions across its streams, one page (protocol §21.5). */
  listSubscriptions(options: unknown = {}) {
    const o = parseOrThrow(RpcListSubscriptionsOptionsSchema, options ?? {}, 'listSubscriptions');
    const service = this.#scope.deps.service;
    if (!service.listSubscriptions) throw new RivuletError('UNAVAILABLE', 'this server does not list subscriptions');
    return service.listSubscriptions(this.#scope.projectId, {
      prefix: o.prefix === undefined ? '/' : canonicalizePath(o.prefix),
      statuses: o.status,
      after: o.after,
      limit: o.limit ?? SubscriptionAdminLimits.listPageDefault,
    });
  }

  /** `processors.register(name, host)` / `processors.get(name)`: processor hosts (protocol §20.1). */
  get processors(): CallablesApi {
    const registry = this.#scope.deps.processors;
    if (!registry) throw new RivuletError('UNAVAILABLE', 'this server hosts no processors');
    return new CallablesApi(this.#scope, registry);
  }
}
