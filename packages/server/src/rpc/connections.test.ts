/**
 * openRpcConnection and rpcWaitForEvent against a fake service: the session's end reaches a
 * connection or a wait whatever it was doing when the session ended, including the moment
 * between the connection being listed and the open call answering (its opening fact being made
 * durable).
 */
import type { ConnectionBatch, ConnectionCloseReason, ConnectionClosed, WaitForEventResponse } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import type { ConnectionHandle } from '../engine/connections/index.js';
import type { StreamService } from '../engine/service.js';
import { openRpcConnection, rpcWaitForEvent } from './connections.js';
import { SessionClosers } from './session-closers.js';

function fakeHandle(): ConnectionHandle & { reasons: ConnectionCloseReason[] } {
  let resolve!: (closed: ConnectionClosed) => void;
  const closed = new Promise<ConnectionClosed>((r) => (resolve = r));
  const handle = {
    connectionKey: 'connection:1',
    streamMaxOffset: 2,
    closed,
    isClosed: false,
    reasons: [] as ConnectionCloseReason[],
    async close(reason: ConnectionCloseReason = 'requested') {
      handle.reasons.push(reason);
      if (handle.isClosed) return false;
      handle.isClosed = true;
      resolve({ reason });
      return true;
    },
  };
  return handle;
}

function callbackStub() {
  const state = { disposed: 0 };
  const make = () =>
    Object.assign(async (_batch: ConnectionBatch) => undefined, {
      dup: () => make(),
      [Symbol.dispose]: () => void state.disposed++,
    });
  return { stub: make(), state };
}

/** A service whose open answers only when the test says so (the opening fact's durable wait). */
function slowService() {
  const handle = fakeHandle();
  let answer!: () => void;
  const opening = new Promise<void>((resolve) => (answer = resolve));
  const service = {
    openConnection: async () => {
      await opening;
      return handle;
    },
  } as unknown as StreamService;
  return { service, handle, answer };
}

describe('openRpcConnection', () => {
  it('closes the connection as session-ended when the session ends while the open is still answering', async () => {
    const { service, handle, answer } = slowService();
    const sessions = new SessionClosers();
    const { stub, state } = callbackStub();
    const opened = openRpcConnection({ service, projectId: null, sessionId: 's1', sessions, path: '/a' }, { processEventBatch: stub });
    sessions.end('s1');
    answer();
    await opened;
    await handle.closed;
    expect(handle.reasons).toEqual(['session-ended']);
    // The duplicate kept for the connection is released with it, and nothing stays registered.
    await Promise.resolve();
    expect(state.disposed).toBe(1);
    expect(sessions.size).toBe(0);
  });

  it('closes an open connection when its session ends later, and forgets it once closed otherwise', async () => {
    const first = slowService();
    const sessions = new SessionClosers();
    first.answer();
    await openRpcConnection({ service: first.service, projectId: null, sessionId: 's1', sessions, path: '/a' }, { processEventBatch: callbackStub().stub });
    expect(first.handle.reasons).toEqual([]);
    sessions.end('s1');
    expect(first.handle.reasons).toEqual(['session-ended']);

    const second = slowService();
    second.answer();
    await openRpcConnection({ service: second.service, projectId: null, sessionId: 's2', sessions, path: '/a' }, { processEventBatch: callbackStub().stub });
    await second.handle.close('requested');
    await Promise.resolve();
    expect(sessions.size).toBe(0);
  });

  it('forgets the session hook when the open is refused', async () => {
    const sessions = new SessionClosers();
    const { stub, state } = callbackStub();
    const service = {
      openConnection: async () => {
        throw new Error('refused');
      },
    } as unknown as StreamService;
    await expect(openRpcConnection({ service, projectId: null, sessionId: 's1', sessions, path: '/a' }, { processEventBatch: stub })).rejects.toThrow('refused');
    expect(sessions.size).toBe(0);
    expect(state.disposed).toBe(1);
  });
});

describe('rpcWaitForEvent', () => {
  it('aborts the wait when its session ends, and forgets the hook once answered', async () => {
    const sessions = new SessionClosers();
    let signal: AbortSignal | undefined;
    const service = {
      waitForEvent: (_p: unknown, _path: unknown, _body: unknown, given: AbortSignal) =>
        new Promise<WaitForEventResponse>((_resolve, reject) => {
          signal = given;
          given.addEventListener('abort', () => reject(new Error('cancelled')));
        }),
    } as unknown as StreamService;
    const waiting = rpcWaitForEvent({ service, projectId: null, sessionId: 's1', sessions, path: '/a' }, { timeoutMs: 1000 });
    expect(signal?.aborted).toBe(false);
    sessions.end('s1');
    await expect(waiting).rejects.toThrow('cancelled');
    expect(signal?.aborted).toBe(true);
    expect(sessions.size).toBe(0);
  });
});
