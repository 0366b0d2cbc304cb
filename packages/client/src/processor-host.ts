/**
 * `@rivulet/client/processor-host` (Node only: it stores state in SQLite through better-sqlite3).
 *
 * `serveProcessors(itx, name, processors, {dbPath})` hosts processors defined with
 * `defineProcessor` and registers the host as `processors.register(name, host)` on every RPC
 * session of `itx` (protocol §20). A `processor-wake` subscription reaches it with an expression
 * such as `["processors", ["get", name], "wakeStreamProcessor"]` (the host picks the processor by
 * the wake's `processorSlug`, else the processor whose slug is the subscription key or ends it
 * after a `#`, else its only processor) or `["processors", ["get", name], ["processor", slug],
 * "wakeStreamProcessor"]` (names the processor).
 *
 * Per (project, stream path, subscription key, processor slug) the host keeps one row
 * `{streamId, checkpoint, state}` in its own SQLite file:
 * - a wake answers the stored checkpoint; a row of another stream lifetime (the source was
 *   destroyed and recreated) starts over from `initialState` at checkpoint 0;
 * - each event is folded with `reduce`, `onEvent` runs, then state AND checkpoint are committed in
 *   one statement (atomic, and durable before the report with the default `durability: "full"`),
 *   and only then is the result reported;
 * - an event at or below the checkpoint is acknowledged without folding (deduplication by
 *   `(streamId, event.offset)`), so a redelivery never folds twice, and a host restart resumes
 *   exactly from its stored checkpoint.
 */
import { RpcTarget } from 'capnweb';
import type { CommittedEvent, ProcessorBatch, ProcessorDeliveryResult, ProcessorWakeRequest } from '@rivulet/contract';
import type { ProcessorDefinition } from './processor.js';
import type { ItxConnection, ItxRoot } from './rpc.js';
import { WorkerError } from './worker.js';

import { ProcessorStore, type Loaded, type ProcessorRecord } from './processor-store.js';

export { defineProcessor, type ProcessorDefinition, type ProcessorEventContext } from './processor.js';
export { ProcessorStore, type ProcessorRecord } from './processor-store.js';

export interface CommittedInfo<S = unknown> {
  slug: string;
  projectId: string | null;
  path: string;
  subscriptionKey: string;
  streamId: string;
  checkpoint: number;
  state: S;
}

export interface ProcessorHostOptions {
  /** The SQLite file of this host (created with its folder). One host process per file. */
  dbPath: string;
  /**
   * `full` (default): a commit is synced to disk before the result is reported. `relaxed`: it
   * survives a process crash but maybe not a power loss; state and checkpoint still go together,
   * and the source follows a checkpoint that went back, so the state stays the fold of the stream.
   */
  durability?: 'full' | 'relaxed';
  /** Called after a commit and before its report (logging, metrics; tests use it to crash there). */
  onCommitted?: ((info: CommittedInfo) => void | Promise<void>) | undefined;
  /** Where unexpected host errors are told (default: console.error). */
  log?: ((message: string, error?: unknown) => void) | undefined;
}

type AnyProcessor = ProcessorDefinition<unknown>;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkRequest(request: unknown): ProcessorWakeRequest {
  const r = request as ProcessorWakeRequest;
  if (
    !isObject(request) ||
    !isObject(r.stream) ||
    typeof r.stream.path !== 'string' ||
    typeof r.stream.streamId !== 'string' ||
    typeof r.subscriptionKey !== 'string' ||
    (r.stream.projectId !== null && typeof r.stream.projectId !== 'string')
  ) {
    throw new WorkerError('wakeStreamProcessor takes {stream: {projectId, path, streamId, streamMaxOffset}, subscriptionKey, processorSlug?}', {
      retryable: false,
    });
  }
  return r;
}

type Wake = (request: unknown) => Promise<{ streamId: string; checkpointOffset: number; processEventBatch: (batch: ProcessorBatch) => Promise<void> }>;

/** The per-processor target `processor(slug)` answers over RPC. */
class ProcessorTarget extends RpcTarget {
  readonly #wake: Wake;

  constructor(wake: Wake) {
    super();
    this.#wake = wake;
  }

  wakeStreamProcessor(request: unknown) {
    return this.#wake(request);
  }
}

/**
 * What the host registers with `processors.register`: exactly `wakeStreamProcessor(request)` and
 * `processor(slug)` are reachable over RPC (an RpcTarget exposes prototype methods only).
 */
class ProcessorHostTarget extends RpcTarget {
  readonly #wake: (request: unknown, slug: string | undefined) => ReturnType<Wake>;
  readonly #has: (slug: string) => boolean;
  readonly #slugs: string;

  constructor(wake: (request: unknown, slug: string | undefined) => ReturnType<Wake>, has: (slug: string) => boolean, slugs: string) {
    super();
    this.#wake = wake;
    this.#has = has;
    this.#slugs = slugs;
  }

  wakeStreamProcessor(request: unknown) {
    return this.#wake(request, undefined);
  }

  processor(slug: unknown): ProcessorTarget {
    if (typeof slug !== 'string' || !this.#has(slug)) {
      throw new WorkerError(`this host has no processor ${JSON.stringify(slug)} (it has ${this.#slugs})`, { retryable: false });
    }
    return new ProcessorTarget((request) => this.#wake(request, slug));
  }
}

/**
 * A processor host: its processors, its store, and the RPC `target` that `serveProcessors`
 * registers. Usable without RPC too (tests call `wake` directly).
 */
export class ProcessorHost {
  readonly #processors = new Map<string, AnyProcessor>();
  readonly #store: ProcessorStore;
  readonly #options: ProcessorHostOptions;
  readonly #itx: () => ItxRoot | undefined;
  /** Batches of one key run one after another. */
  readonly #queues = new Map<string, Promise<unknown>>();
  /** Each key's row as last loaded or committed by this host. */
  readonly #cache = new Map<string, Loaded>();

  /** The object registered over RPC: `wakeStreamProcessor(request)` and `processor(slug)`. */
  readonly target: RpcTarget;

  constructor(processors: readonly ProcessorDefinition<unknown>[], options: ProcessorHostOptions, itx: () => ItxRoot | undefined = () => undefined) {
    for (const processor of processors) {
      if (this.#processors.has(processor.slug)) throw new TypeError(`two processors share the slug "${processor.slug}"`);
      this.#processors.set(processor.slug, processor);
    }
    if (this.#processors.size === 0) throw new TypeError('a processor host needs at least one processor');
    this.#options = options;
    this.#store = new ProcessorStore(options.dbPath, options.durability);
    this.#itx = itx;
    this.target = new ProcessorHostTarget(
      (request, slug) => this.wake(request, slug),
      (slug) => this.#processors.has(slug),
      [...this.#processors.keys()].join(', '),
    );
  }

  /** The stored record of one processor for one subscription (`slug` picked as a wake would). */
  read<S = unknown>(where: { path: string; subscriptionKey: string; slug?: string; projectId?: string | null }): ProcessorRecord<S> | undefined {
    const slug = where.slug ?? this.pickSlug(undefined, where.subscriptionKey);
    return this.#store.read<S>(where.projectId ?? null, where.path, where.subscriptionKey, slug);
  }

  /** Every stored record. */
  records(): ProcessorRecord[] {
    return this.#store.list();
  }

  /** Closes the SQLite file (after the host stopped serving). */
  close(): void {
    this.#store.close();
  }

  private pickSlug(processorSlug: string | undefined, subscriptionKey: string): string {
    if (processorSlug !== undefined) {
      if (this.#processors.has(processorSlug)) return processorSlug;
      throw new WorkerError(`this host has no processor "${processorSlug}"`, { retryable: false });
    }
    for (const slug of this.#processors.keys()) {
      if (subscriptionKey === slug || subscriptionKey.endsWith(`#${slug}`)) return slug;
    }
    if (this.#processors.size === 1) return this.#processors.keys().next().value as string;
    throw new WorkerError(
      `subscription "${subscriptionKey}" does not say which processor of this host it wakes: name the key after a slug (${[...this.#processors.keys()].join(', ')}) or use ["processor", slug] in the expression`,
      { retryable: false },
    );
  }

  private serial<T>(key: string, task: () => Promise<T> | T): Promise<T> {
    const previous = this.#queues.get(key) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.#queues.set(key, settled);
    void settled.then(() => {
      if (this.#queues.get(key) === settled) this.#queues.delete(key);
    });
    return next;
  }

  /**
   * Answers a wake (protocol §20.3, §20.7): the stored checkpoint, or 0 with the initial state for
   * a new lifetime, and the `processEventBatch` callback. `slug` names the processor, else it is
   * picked from the request (see the module comment).
   */
  async wake(request: unknown, slugOrUndefined?: string) {
    const r = checkRequest(request);
    const slug = slugOrUndefined ?? this.pickSlug(r.processorSlug, r.subscriptionKey);
    const processor = this.#processors.get(slug)!;
    const { projectId, path, streamId } = r.stream;
    const key = JSON.stringify([projectId, path, r.subscriptionKey, slug]);
    return this.serial(key, () => {
      let loaded = this.#store.load(projectId, path, r.subscriptionKey, slug);
      if (!loaded || loaded.streamId !== streamId) {
        // Another lifetime (or none yet): start over from the initial state (protocol §20.7).
        loaded = { streamId, checkpoint: 0, stateJson: JSON.stringify(processor.initialState) };
        this.#store.save(projectId, path, r.subscriptionKey, slug, loaded);
      }
      this.#cache.set(key, loaded);
      return {
        streamId: loaded.streamId,
        checkpointOffset: loaded.checkpoint,
        processEventBatch: (batch: ProcessorBatch) => this.processEventBatch(processor, key, r.subscriptionKey, batch),
      };
    });
  }

  private async processEventBatch(processor: AnyProcessor, key: string, subscriptionKey: string, batch: ProcessorBatch): Promise<void> {
    const result = await this.serial(key, () => this.fold(processor, key, subscriptionKey, batch)).then(
      (ok): ProcessorDeliveryResult => ok,
      (error: unknown): ProcessorDeliveryResult => {
        const retryable = (error as { retryable?: unknown }).retryable;
        return { outcome: 'error', error: { message: messageOf(error), ...(retryable === false ? { retryable: false } : {}) } };
      },
    );
    try {
      // Reported before this call returns: the report stub stays valid for the call's duration.
      await batch.reportDeliveryResult(result);
    } catch (error) {
      // The source will wake the processor again and learn the checkpoint from the store.
      (this.#options.log ?? ((m, e) => console.error(m, e)))(`could not report the result of offset ${batch.events[0]?.offset} of ${batch.path}`, error);
    }
  }

  private async fold(processor: AnyProcessor, key: string, subscriptionKey: string, batch: ProcessorBatch): Promise<ProcessorDeliveryResult> {
    const { projectId, path } = batch;
    const loaded = this.#cache.get(key) ?? this.#store.load(projectId, path, subscriptionKey, processor.slug);
    if (!loaded || loaded.streamId !== batch.streamId) {
      throw new WorkerError(`this batch belongs to stream lifetime ${batch.streamId}, but the processor was last woken for ${loaded?.streamId ?? 'none'}`);
    }
    let checkpoint = loaded.checkpoint;
    let stateJson = loaded.stateJson;
    for (const event of batch.events as CommittedEvent[]) {
      // Deduplication by (streamId, event.offset): at or below the checkpoint it is already folded.
      if (event.offset <= checkpoint) continue;
      const previousState = JSON.parse(stateJson) as unknown;
      const next = processor.reduce(JSON.parse(stateJson) as unknown, event);
      let nextJson: string | undefined;
      try {
        nextJson = JSON.stringify(next);
      } catch (error) {
        throw new WorkerError(`processor "${processor.slug}" reduced offset ${event.offset} to a state that is not JSON: ${messageOf(error)}`, { retryable: false });
      }
      if (nextJson === undefined) throw new WorkerError(`processor "${processor.slug}" reduced offset ${event.offset} to a state that is not JSON`, { retryable: false });
      if (processor.onEvent) {
        const currentRoot = this.#itx;
        await processor.onEvent({
          event,
          previousState,
          state: JSON.parse(nextJson) as unknown,
          stream: { projectId, path, streamId: batch.streamId },
          subscriptionKey,
          get itx(): ItxRoot {
            const root = currentRoot();
            if (!root) throw new WorkerError('the processor host is not connected', { unavailable: true });
            return root;
          },
        });
      }
      stateJson = nextJson;
      checkpoint = event.offset;
    }
    if (checkpoint !== loaded.checkpoint) {
      const committed: Loaded = { streamId: batch.streamId, checkpoint, stateJson };
      this.#store.save(projectId, path, subscriptionKey, processor.slug, committed);
      this.#cache.set(key, committed);
      await this.#options.onCommitted?.({
        slug: processor.slug,
        projectId,
        path,
        subscriptionKey,
        streamId: batch.streamId,
        checkpoint,
        state: JSON.parse(stateJson) as unknown,
      });
    }
    return { outcome: 'ok', checkpointOffset: checkpoint };
  }
}

export interface ServedProcessors {
  /** Resolves once the first registration is in place. */
  readonly ready: Promise<void>;
  /** The host (read its records, or call it directly). */
  readonly host: ProcessorHost;
  /** Unregisters for good and closes the SQLite file. */
  stop(): Promise<void>;
}

/**
 * Hosts `processors` under `name`: registers the host on the current RPC session of `itx` and again
 * after every reconnect; `stop()` unregisters and closes the store.
 */
export function serveProcessors(
  itx: ItxConnection,
  name: string,
  processors: readonly ProcessorDefinition<unknown>[],
  options: ProcessorHostOptions,
): ServedProcessors {
  const host = new ProcessorHost(processors, options, () => (itx.closed ? undefined : itx.root));
  let registration: { unregister(): Promise<unknown> } | undefined;
  let stopped = false;
  let first = true;
  let markReady!: () => void;
  let failReady!: (error: unknown) => void;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    failReady = reject;
  });
  const off = itx.onSession(async (root) => {
    if (stopped) return;
    try {
      registration = (await root.processors.register(name, host.target)) as unknown as { unregister(): Promise<unknown> };
      if (first) markReady();
    } catch (error) {
      if (first) failReady(error);
    }
    first = false;
  });
  return {
    ready,
    host,
    async stop() {
      if (stopped) return;
      stopped = true;
      off();
      await registration?.unregister().catch(() => undefined);
      host.close();
    },
  };
}
