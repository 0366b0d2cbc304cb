/**
 * `watch(itx, path, options, onBatch)`: a live connection (protocol §19) kept open across
 * reconnects, in one call.
 *
 *   const itx = await connect('http://127.0.0.1:7420');
 *   const w = watch(itx, '/shop/orders', { replayAfterOffset: 0, filter: { eventTypes: ['order-created'] } },
 *     (batch) => { for (const e of batch.events) console.log(e.offset, e.payload); });
 *   await w.ready;
 *
 * - `onBatch` is awaited: the server sends the next batch only after it returns, so a slow
 *   handler slows only its own connection. A handler that throws closes the connection
 *   (`delivery-failed`) and ends the watch.
 * - After a reconnect (a new RPC session) the watch reopens with the same key, replaying after the
 *   last event it received, and only in the same stream lifetime (`expectedStreamId`): durable
 *   events are neither lost nor repeated; ephemeral events sent while disconnected are gone. A
 *   connection the server closed as `backlog-exceeded` is reopened the same way, and one closed as
 *   `server-stopped` too, on the same session after a short pause (on Cloudflare the stream's
 *   Durable Object can stop while the session lives on).
 * - The watch ends (`closed` resolves) on close(), or when the server ends it for a reason a reopen
 *   cannot mend: the handler or filter failed, the key was taken by another openConnection, the
 *   stream was destroyed or recreated, or a reopen was refused.
 */
import { type ConnectionBatch, type ConnectionClosed, type OpenConnectionOptions } from '@rivulet/contract';
import type { ItxConnection, ItxRoot } from './rpc.js';
import type { LiveConnectionRpc } from './rpc-types.js';

export interface WatchOptions extends OpenConnectionOptions {
  /** Reopen after a reconnect or a backlog close, resuming after the last event received (default true). */
  resume?: boolean | undefined;
}

/** How a watch ended: a connection's close, or a (re)open the server refused. */
export type WatchEnded = ConnectionClosed | { reason: 'open-failed'; error: string; code?: string };

export interface LiveWatch {
  /** Resolves once the first connection is open; rejects (with the server's error) when it was refused. */
  readonly ready: Promise<void>;
  /** Resolves when the watch has ended for good. */
  readonly closed: Promise<WatchEnded>;
  /** The connection key (the server's generated one unless options named it), once open. */
  readonly connectionKey: string | undefined;
  /** Where a reopen resumes: the last event received, or the head when it opened (live only). */
  readonly resumeAfter: number | undefined;
  close(): Promise<void>;
}

/** How long a watch waits before reopening on the same session after `server-stopped`. */
const REOPEN_AFTER_STOP_MS = 100;

/** Errors after which reopening can never succeed. */
const FINAL_CODES = new Set(['INVALID_INPUT', 'CONFLICT', 'FORBIDDEN', 'NOT_FOUND', 'UNAUTHENTICATED']);

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function watch(
  itx: ItxConnection,
  path: string,
  options: WatchOptions,
  onBatch: (batch: ConnectionBatch) => unknown,
): LiveWatch {
  const { resume = true, ...open } = options;
  const replays = open.events !== false;
  let key = open.connectionKey;
  let streamId: string | undefined;
  let resumeAfter = open.replayAfterOffset;
  let handle: LiveConnectionRpc | undefined;
  let generation = 0;
  let stopped = false;
  let first = true;

  let resolveReady!: () => void;
  let rejectReady!: (error: unknown) => void;
  const ready = new Promise<void>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  ready.catch(() => undefined);
  let resolveClosed!: (ended: WatchEnded) => void;
  const closed = new Promise<WatchEnded>((resolve) => {
    resolveClosed = resolve;
  });

  const end = (ended: WatchEnded) => {
    if (stopped) return;
    stopped = true;
    off?.();
    resolveClosed(ended);
  };

  const openOn = async (root: ItxRoot): Promise<void> => {
    if (stopped) return;
    if (!first && !resume) {
      end({ reason: 'session-ended' });
      return;
    }
    const mine = ++generation;
    const request: OpenConnectionOptions = { ...open };
    if (key !== undefined) request.connectionKey = key;
    if (!first && replays) {
      if (resumeAfter !== undefined) request.replayAfterOffset = resumeAfter;
      if (streamId !== undefined) request.expectedStreamId = streamId;
    }
    const processEventBatch = (batch: ConnectionBatch) => {
      if (mine !== generation || stopped) return undefined;
      streamId = batch.streamId;
      const last = batch.events[batch.events.length - 1];
      if (last && (resumeAfter === undefined || last.offset > resumeAfter)) resumeAfter = last.offset;
      return onBatch(batch);
    };
    let opened: LiveConnectionRpc;
    try {
      opened = (await root.streams.get(path).openConnection({ ...request, processEventBatch })) as unknown as LiveConnectionRpc;
      key = await opened.connectionKey;
      if (resumeAfter === undefined && replays) resumeAfter = await opened.streamMaxOffset;
    } catch (error) {
      const code = codeOf(error);
      if (first || (code !== undefined && FINAL_CODES.has(code))) {
        if (first) rejectReady(error);
        end({ reason: 'open-failed', error: error instanceof Error ? error.message : String(error), ...(code ? { code } : {}) });
      }
      // Otherwise the session broke while opening: the next session reopens.
      return;
    }
    if (stopped || mine !== generation) {
      await Promise.resolve(opened.close()).catch(() => undefined);
      return;
    }
    handle = opened;
    if (first) {
      first = false;
      resolveReady();
    }
    opened.whenClosed().then(
      (outcome) => {
        if (stopped || mine !== generation) return;
        if (outcome.reason === 'backlog-exceeded' && resume && replays) {
          void openOn(root);
          return;
        }
        if (outcome.reason === 'server-stopped' && resume) {
          // The part of the server that held the stream stopped (on Cloudflare a stream's Durable
          // Object, while the session lives on). Try this session again shortly; if it is ending
          // too, that open fails quietly and the next session reopens.
          setTimeout(() => {
            if (!stopped && mine === generation) void openOn(root);
          }, REOPEN_AFTER_STOP_MS);
          return;
        }
        // The session is ending: the next session reopens.
        if (outcome.reason === 'server-stopped' || outcome.reason === 'session-ended') return;
        end(outcome);
      },
      () => {
        // The session broke: the next session reopens.
      },
    );
  };

  const off: (() => void) | undefined = itx.onSession((root) => openOn(root));

  return {
    ready,
    closed,
    get connectionKey() {
      return key;
    },
    get resumeAfter() {
      return resumeAfter;
    },
    async close() {
      if (stopped) return;
      end({ reason: 'requested' });
      generation++;
      const current = handle;
      handle = undefined;
      if (current) await Promise.resolve(current.close()).catch(() => undefined);
    },
  };
}
