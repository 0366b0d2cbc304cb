/**
 * watch() against a scripted ITX connection: what it asks the server on the first open and on
 * every reopen (a new session, a backlog close), which closes end it, and that batches of a
 * superseded connection are dropped. The real server path is tested end to end in
 * packages/server/test/e2e/live-connections.test.ts.
 */
import type { CommittedEvent, ConnectionBatch, ConnectionClosed } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import type { ItxConnection, ItxRoot } from './rpc.js';
import type { OpenConnectionRpcOptions } from './rpc-types.js';
import { watch } from './watch.js';

interface Opened {
  options: OpenConnectionRpcOptions;
  root: FakeRoot;
  closeCalls: number;
  end(outcome: ConnectionClosed): void;
  breakSession(): void;
}

class FakeRoot {
  readonly opens: Opened[] = [];
  refuseWith: (Error & { code?: string }) | null = null;

  readonly streams = {
    get: (path: string) => ({
      openConnection: async (options: OpenConnectionRpcOptions) => {
        expect(path).toBe('/w');
        if (this.refuseWith) throw this.refuseWith;
        let end!: (outcome: ConnectionClosed) => void;
        let breakSession!: () => void;
        const closed = new Promise<ConnectionClosed>((resolve, reject) => {
          end = resolve;
          breakSession = () => reject(new Error('RPC session failed'));
        });
        closed.catch(() => undefined);
        const opened: Opened = { options, root: this, closeCalls: 0, end, breakSession };
        this.opens.push(opened);
        return {
          connectionKey: options.connectionKey ?? 'connection:generated',
          streamMaxOffset: 40,
          close: async () => {
            opened.closeCalls++;
            return { closed: true };
          },
          whenClosed: () => closed,
        };
      },
    }),
  };
}

class FakeItx {
  root = new FakeRoot();
  readonly roots: FakeRoot[] = [this.root];
  private readonly listeners = new Set<(root: ItxRoot) => unknown>();

  onSession(listener: (root: ItxRoot) => unknown): () => void {
    this.listeners.add(listener);
    void listener(this.root as unknown as ItxRoot);
    return () => this.listeners.delete(listener);
  }

  /** A reconnect: a new session and root (refusing every open with `refuseWith`), announced to every listener. */
  newSession(refuseWith: (Error & { code?: string }) | null = null): FakeRoot {
    for (const opened of this.root.opens) opened.breakSession();
    this.root = new FakeRoot();
    this.root.refuseWith = refuseWith;
    this.roots.push(this.root);
    for (const listener of this.listeners) void listener(this.root as unknown as ItxRoot);
    return this.root;
  }

  get listenerCount(): number {
    return this.listeners.size;
  }
}

const asItx = (fake: FakeItx) => fake as unknown as ItxConnection;
const flush = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

function batch(offsets: number[], streamId = 'life-1'): ConnectionBatch {
  return {
    projectId: null,
    path: '/w',
    streamId,
    streamMaxOffset: offsets.at(-1) ?? 40,
    events: offsets.map((offset) => ({ path: '/w', offset, createdAt: '2026-01-01T00:00:00.000Z', type: 'x' }) as CommittedEvent),
    state: null,
  };
}

describe('watch', () => {
  it('opens with the caller’s options and hands every batch to the handler, awaiting it', async () => {
    const itx = new FakeItx();
    const seen: number[][] = [];
    const w = watch(asItx(itx), '/w', { replayAfterOffset: 3, filter: { eventTypes: ['x'] } }, async (b) => {
      seen.push(b.events.map((e) => e.offset));
      return 'handled';
    });
    await w.ready;
    const [first] = itx.root.opens;
    expect(first!.options).toMatchObject({ replayAfterOffset: 3, filter: { eventTypes: ['x'] } });
    expect(first!.options.connectionKey).toBeUndefined();
    expect(await first!.options.processEventBatch(batch([4, 5]))).toBe('handled');
    expect(seen).toEqual([[4, 5]]);
    expect(w.connectionKey).toBe('connection:generated');
    expect(w.resumeAfter).toBe(5);
  });

  it('reopens on a new session with the same key, after the last event, in the same lifetime', async () => {
    const itx = new FakeItx();
    const seen: number[] = [];
    const w = watch(asItx(itx), '/w', { replayAfterOffset: 0 }, (b) => {
      seen.push(...b.events.map((e) => e.offset));
    });
    await w.ready;
    const first = itx.root.opens[0]!;
    await first.options.processEventBatch(batch([1, 2, 3], 'life-7'));
    const second = itx.newSession();
    await flush();
    expect(second.opens).toHaveLength(1);
    expect(second.opens[0]!.options).toMatchObject({ connectionKey: 'connection:generated', replayAfterOffset: 3, expectedStreamId: 'life-7' });
    // A late batch of the superseded connection is dropped.
    await first.options.processEventBatch(batch([4]));
    await second.opens[0]!.options.processEventBatch(batch([4, 5], 'life-7'));
    expect(seen).toEqual([1, 2, 3, 4, 5]);
  });

  it('resumes a live-only watch after the head it opened at when no event came yet', async () => {
    const itx = new FakeItx();
    const w = watch(asItx(itx), '/w', {}, () => undefined);
    await w.ready;
    expect(w.resumeAfter).toBe(40);
    const next = itx.newSession();
    await flush();
    expect(next.opens[0]!.options).toMatchObject({ replayAfterOffset: 40 });
  });

  it('reopens after a backlog close, and ends on a close a reopen cannot mend', async () => {
    const itx = new FakeItx();
    const w = watch(asItx(itx), '/w', { connectionKey: 'mine' }, () => undefined);
    await w.ready;
    await itx.root.opens[0]!.options.processEventBatch(batch([41]));
    itx.root.opens[0]!.end({ reason: 'backlog-exceeded', error: 'fell behind' });
    await flush();
    expect(itx.root.opens).toHaveLength(2);
    expect(itx.root.opens[1]!.options).toMatchObject({ connectionKey: 'mine', replayAfterOffset: 41 });
    itx.root.opens[1]!.end({ reason: 'replaced' });
    expect(await w.closed).toEqual({ reason: 'replaced' });
    // Ended for good: a new session opens nothing and the listener is gone.
    itx.newSession();
    await flush();
    expect(itx.root.opens).toHaveLength(0);
    expect(itx.listenerCount).toBe(0);
  });

  it('reopens on the same session after server-stopped (a stream object that went away), after the last event', async () => {
    const itx = new FakeItx();
    const w = watch(asItx(itx), '/w', { connectionKey: 'k' }, () => undefined);
    await w.ready;
    await itx.root.opens[0]!.options.processEventBatch(batch([41, 42], 'life-3'));
    itx.root.opens[0]!.end({ reason: 'server-stopped' });
    await flush();
    expect(itx.root.opens).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(itx.root.opens).toHaveLength(2);
    expect(itx.root.opens[1]!.options).toMatchObject({ connectionKey: 'k', replayAfterOffset: 42, expectedStreamId: 'life-3' });
    // When the session is ending too, the reopen fails quietly and the next session reopens.
    itx.root.refuseWith = Object.assign(new Error('session ending'), { code: 'UNAVAILABLE' });
    itx.root.opens[1]!.end({ reason: 'server-stopped' });
    await new Promise((resolve) => setTimeout(resolve, 150));
    const next = itx.newSession();
    await flush();
    expect(next.opens).toHaveLength(1);
    expect(next.opens[0]!.options).toMatchObject({ connectionKey: 'k', replayAfterOffset: 42 });
    await w.close();
    expect(await w.closed).toEqual({ reason: 'requested' });
  });

  it('ends with open-failed when a reopen is refused for good (the stream was recreated)', async () => {
    const itx = new FakeItx();
    const w = watch(asItx(itx), '/w', {}, () => undefined);
    await w.ready;
    itx.newSession(Object.assign(new Error('lifetime changed'), { code: 'CONFLICT' }));
    expect(await w.closed).toEqual({ reason: 'open-failed', error: 'lifetime changed', code: 'CONFLICT' });
  });

  it('with resume: false, a new session ends the watch; close() closes the connection once', async () => {
    const itx = new FakeItx();
    const once = watch(asItx(itx), '/w', { resume: false }, () => undefined);
    await once.ready;
    itx.newSession();
    expect(await once.closed).toEqual({ reason: 'session-ended' });

    const itx2 = new FakeItx();
    const w = watch(asItx(itx2), '/w', {}, () => undefined);
    await w.ready;
    await w.close();
    await w.close();
    expect(itx2.root.opens[0]!.closeCalls).toBe(1);
    expect(await w.closed).toEqual({ reason: 'requested' });
  });
});
