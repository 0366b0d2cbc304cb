/**
 * The stream service of the Worker host (engine/service.ts's StreamService): every call goes to
 * the Durable Object of the stream it concerns, over Durable Object RPC, and comes back with its
 * RivuletError intact (worker-wire.ts). The subscribe and unsubscribe commands append on the
 * *source* stream, so they go to the source's object. Listing asks the project's index for paths
 * and each listed stream's object for its head. A tail is a stream of newline-delimited JSON
 * items from the stream's object; cancelling it (the SSE client went away) ends the tail there.
 * Append requests are counted here, in the isolate that serves /metrics (as LocalStreamService
 * counts them in the Node host); what happens inside the stream objects is counted there and
 * reaches /metrics through the project's index (metrics-rollup.ts, docs/cloudflare.md §4.2).
 * Live connections and waits run in the stream's object; their callbacks and cancellation stay
 * with the caller (worker-connections.ts): a wait is cancelled by naming its id to the object.
 */
import { RivuletError, canonicalizePath, type ListResponse, type StreamListEntry } from '@rivulet/contract';
import { whenAborted } from '../../core/when-aborted.js';
import type { ServerMetrics } from '../../engine/metrics.js';
import type { StreamService } from '../../engine/service.js';
import type { TailItem, TailOptions } from '../../engine/tail.js';
import { openRemoteConnection } from './connections.js';
import { listProjectSubscriptions } from './subscriptions.js';
import { projectObjectName, streamObjectName, type WorkerEnv } from './env.js';
import { unwrap } from './wire.js';

async function* readTail(stream: ReadableStream<Uint8Array>, signal: AbortSignal | undefined): AsyncGenerator<TailItem> {
  const reader = stream.getReader();
  const onAbort = () => void reader.cancel().catch(() => undefined);
  signal?.addEventListener('abort', onAbort);
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for (;;) {
      if (signal?.aborted) return;
      const { done, value } = await reader.read();
      if (done) return;
      buffered += decoder.decode(value, { stream: true });
      let newline = buffered.indexOf('\n');
      while (newline !== -1) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (line !== '') yield JSON.parse(line) as TailItem;
        newline = buffered.indexOf('\n');
      }
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await reader.cancel().catch(() => undefined);
  }
}

export function durableStreamService(env: WorkerEnv, metrics?: ServerMetrics): StreamService {
  const object = (projectId: string | null, path: string) => env.STREAMS.getByName(streamObjectName(projectId, path));
  const at = (path: string) => `stream ${path}`;
  return {
    async append(projectId, path, inputs) {
      try {
        const events = await unwrap(at(path), () => object(projectId, path).append(projectId, path, inputs));
        metrics?.appends.inc();
        return events;
      } catch (error) {
        if (error instanceof RivuletError) metrics?.appendRejections.inc({ code: error.code });
        throw error;
      }
    },
    read: (projectId, path, options) => unwrap(at(path), () => object(projectId, path).read(projectId, path, options)),
    state: (projectId, path) => unwrap(at(path), () => object(projectId, path).state(projectId, path)),
    destroy: (projectId, path) => unwrap(at(path), () => object(projectId, path).destroy(projectId, path)),
    async list(projectId, options): Promise<ListResponse> {
      const page = await unwrap('the stream index', () => env.STREAM_INDEX.getByName(projectObjectName(projectId)).list(projectId, options));
      const summaries = await Promise.all(
        page.entries.map((entry) => unwrap(at(entry.path), () => object(projectId, entry.path).summary(projectId, entry.path))),
      );
      const streams: StreamListEntry[] = [];
      page.entries.forEach((entry, i) => {
        const summary = summaries[i];
        // The index may lag a destroy; the stream's own object has the last word.
        if (summary) streams.push({ path: entry.path, streamId: summary.streamId, createdAt: summary.createdAt, maxOffset: summary.maxOffset });
      });
      const response: ListResponse = { streams };
      if (page.more && page.entries.length > 0) response.nextAfter = page.entries[page.entries.length - 1]!.path;
      return response;
    },
    tail(projectId, path, options: TailOptions): AsyncIterable<TailItem> {
      return (async function* () {
        const stream = await unwrap(at(path), () =>
          object(projectId, path).tail(projectId, path, {
            afterOffset: options.afterOffset,
            expectedStreamId: options.expectedStreamId,
            eventTypes: options.eventTypes,
          }),
        );
        yield* readTail(stream, options.signal);
      })();
    },
    subscribeToEventsFrom(projectId, receivingPath, body) {
      const source = canonicalizePath(body.sourceStreamPath);
      return unwrap(at(source), () => object(projectId, source).subscribeToEventsFrom(projectId, receivingPath, body));
    },
    unsubscribeFromEvents(projectId, receivingPath, body) {
      const source = canonicalizePath(body.sourceStreamPath);
      return unwrap(at(source), () => object(projectId, source).unsubscribeFromEvents(projectId, receivingPath, body));
    },
    setSubscriptionCursor: (projectId, path, body) => unwrap(at(path), () => object(projectId, path).setSubscriptionCursor(projectId, path, body)),
    resumeSubscription: (projectId, path, body) => unwrap(at(path), () => object(projectId, path).resumeSubscription(projectId, path, body)),
    setSubscriptionCursorAndResume: (projectId, path, body) =>
      unwrap(at(path), () => object(projectId, path).setSubscriptionCursorAndResume(projectId, path, body)),
    openConnection: (projectId, path, options, callback) =>
      openRemoteConnection(
        (opener) => unwrap(at(path), () => object(projectId, path).openConnection(projectId, path, options, opener)),
        callback,
      ),
    listSubscriptions(projectId, options) {
      const index = () => env.STREAM_INDEX.getByName(projectObjectName(projectId));
      return listProjectSubscriptions(
        {
          subscribed: (query) => unwrap('the stream index', () => index().subscribed(projectId, query)),
          entries: (path) => unwrap(at(path), () => object(projectId, path).subscriptionEntries(projectId, path)),
        },
        options,
      );
    },
    deliveryAttempts: (projectId, path, query) => unwrap(at(path), () => object(projectId, path).deliveryAttempts(projectId, path, query)),
    previewSubscription: (projectId, path, body) => unwrap(at(path), () => object(projectId, path).previewSubscription(projectId, path, body)),
    async waitForEvent(projectId, path, body, signal) {
      // One stub for both calls: calls on one stub reach the object in order, so a cancel never
      // overtakes its wait.
      const stub = object(projectId, path);
      const waitId = crypto.randomUUID();
      const waiting = unwrap(at(path), () => stub.waitForEvent(projectId, path, body, waitId));
      const stopListening = whenAborted(signal, () => void stub.cancelWait(projectId, path, waitId).catch(() => undefined));
      try {
        return await waiting;
      } finally {
        stopListening();
      }
    },
  };
}
