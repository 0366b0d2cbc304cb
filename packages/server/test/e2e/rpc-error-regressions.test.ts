/**
 * FAILING (bugs in packages/server/src/rpc/errors.ts `rpcSendError`): what an error tells an RPC
 * client. Protocol §7 and §18.2: anything unexpected is INTERNAL, logged with a reference the
 * message names, and errors cross without a stack; protocol §1.3: a client mistake is never a 500.
 *
 * 1. Every error that crosses carries the server's stack trace (server file paths and line
 *    numbers): `rpcSendError` returns the error itself (or a fresh Error for INTERNAL), and capnweb
 *    sends the stack of any error `onSendError` returns ("If it has a stack property, the stack will
 *    be sent to the client", capnweb RpcSessionOptions). Expected: no server stack at the client.
 * 2. An unexpected error that happens to carry a string `code` (SQLite's SqliteError `SQLITE_*`,
 *    Node system errors `EACCES`, …) crosses verbatim — its code, message and stack — and is not
 *    logged: the line `if (typeof (error as { code?: unknown }).code === 'string') return error;`.
 *    Expected: INTERNAL with a reference, the cause logged.
 * 3. A RivuletError with a `cause` (the engine's UNAVAILABLE "storage failed to commit" wraps the
 *    storage error, engine/actor.ts `durable()`) sends the cause to the client: capnweb serialises
 *    `cause`. Over HTTP `toBody()` drops it. Expected: code and message only.
 * 4. Calling a method that does not exist (a client mistake) answers INTERNAL and is logged as an
 *    internal error. Expected: a client error (INVALID_INPUT or NOT_FOUND) naming the method.
 * 5. A worker's own error, reached through `workers.get(name).method()`, arrives at the caller as
 *    INTERNAL and is logged as an internal error of the server. The line meant to let it through,
 *    `if ((error as { fromPeer?: unknown }).fromPeer === true) return error;`, never matches:
 *    capnweb 0.12 sets no `fromPeer` on errors it deserialises. Expected (the comment above that
 *    line): the worker's message and flags (`unavailable`, `retryable`) reach the caller, and the
 *    server logs nothing.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { connect, RpcTarget, WorkerError, type ItxConnection } from '@rivulet/client';
import { RivuletError } from '@rivulet/contract';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { rpcError } from '../fixtures/rpc-helpers.js';

let server: TestServer;
let itx: ItxConnection;

beforeAll(async () => {
  server = await startTestServer();
  itx = await connect(server.url);
});

afterAll(async () => {
  itx?.close();
  server.internalErrors.length = 0;
  await server?.close();
});

/** Server source locations a client must not see (client and server share this checkout here). */
const SERVER_FRAMES = /packages\/server\/src\//;

describe('errors crossing RPC say nothing internal', () => {
  it('a client error (FORBIDDEN) carries no server stack trace', async () => {
    const error = await rpcError(itx.root.streams.get('/e/x').append({ type: 'events.iterate.com/stream/created', payload: {} } as never));
    expect(error.code).toBe('FORBIDDEN');
    expect(error.stack ?? '').not.toMatch(SERVER_FRAMES); // before the fix: "RivuletError: … at checkInput (…/packages/server/src/core/append-input.ts:48:13) …"
  });

  it('an INTERNAL error carries no server stack trace', async () => {
    const spy = vi.spyOn(server.server.service, 'read').mockRejectedValueOnce(new TypeError('boom'));
    try {
      const error = await rpcError(itx.root.streams.get('/e/y').getEvents());
      expect(error.code).toBe('INTERNAL');
      expect(error.stack ?? '').not.toMatch(SERVER_FRAMES); // before the fix: "Error: internal error (reference …) at Object.onSendError (…/packages/server/src/rpc/errors.ts:17:26) …"
    } finally {
      spy.mockRestore();
      server.internalErrors.length = 0;
    }
  });

  it('an unexpected error carrying a string `code` (SQLite, Node system errors) is INTERNAL and logged, not passed through', async () => {
    const sqlite = Object.assign(new Error('SQLITE_IOERR: disk I/O error reading /srv/secret/rivulet.db'), { code: 'SQLITE_IOERR' });
    const spy = vi.spyOn(server.server.service, 'read').mockRejectedValueOnce(sqlite);
    try {
      const error = await rpcError(itx.root.streams.get('/e/z').getEvents());
      expect(error.code).toBe('INTERNAL'); // before the fix: "SQLITE_IOERR"
      expect(error.message).not.toContain('/srv/secret'); // before the fix: the SQLite message with the file path
      expect(server.internalErrors).toHaveLength(1); // before the fix: 0 — nothing was logged
    } finally {
      spy.mockRestore();
      server.internalErrors.length = 0;
    }
  });

  it('the cause of a RivuletError (UNAVAILABLE "storage failed to commit") does not cross', async () => {
    const sqlite = Object.assign(new Error('SQLITE_FULL: database or disk is full at /srv/secret/rivulet.db'), { code: 'SQLITE_FULL' });
    const unavailable = new RivuletError('UNAVAILABLE', 'storage failed to commit; the append was not stored', undefined, { cause: sqlite });
    const spy = vi.spyOn(server.server.service, 'append').mockRejectedValueOnce(unavailable);
    try {
      const error = await rpcError(itx.root.streams.get('/e/w').append({ type: 'x' }));
      expect(error.code).toBe('UNAVAILABLE');
      expect(error.message).toBe('storage failed to commit; the append was not stored');
      expect(error.cause).toBeUndefined(); // before the fix: the SqliteError, with its message, code and stack
    } finally {
      spy.mockRestore();
    }
  });

  it('calling a method that does not exist is a client error, not INTERNAL', async () => {
    const stream = itx.root.streams.get('/e/v') as unknown as { noSuchMethod(): Promise<unknown> };
    const error = await rpcError(stream.noSuchMethod());
    expect(['INVALID_INPUT', 'NOT_FOUND']).toContain(error.code); // before the fix: "INTERNAL"
    expect(server.internalErrors).toEqual([]); // before the fix: "internal error … TypeError: 'noSuchMethod' is not a function."
    server.internalErrors.length = 0;
  });

  it('a worker\'s error reached through workers.get(name) crosses to the caller as the worker raised it, and is not logged as INTERNAL', async () => {
    class Thrower extends RpcTarget {
      fail(): never {
        throw new WorkerError('worker says no', { unavailable: true });
      }
    }
    const worker = await connect(server.url, { reconnect: false });
    try {
      await worker.root.workers.register('thrower', new Thrower());
      const error = await rpcError((itx.root.workers.get('thrower') as unknown as { fail(): Promise<void> }).fail());
      expect(error.message).toBe('worker says no'); // before the fix: "internal error (reference …)"
      expect(error.unavailable).toBe(true); // before the fix: undefined
      expect(server.internalErrors).toEqual([]); // before the fix: "internal error … in an RPC call: Error: worker says no …"
    } finally {
      worker.close();
      server.internalErrors.length = 0;
    }
  });
});
