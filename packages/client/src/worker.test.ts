/**
 * serveWorker and WorkerError without a server: WorkerError's properties are own, enumerable
 * fields (so Cap'n Web carries them across, checked over an in-memory MessageChannel session), and
 * serveWorker registers on the current session, again on every new one, and never after stop().
 */
import { describe, expect, it, vi } from 'vitest';
import { newMessagePortRpcSession, RpcTarget } from 'capnweb';
import type { ItxBatch } from './rpc-types.js';
import type { ItxConnection, ItxRoot } from './rpc.js';
import { serveWorker, WorkerError } from './worker.js';

describe('WorkerError', () => {
  it('defaults to retryable and available; both flags are own enumerable properties', () => {
    const plain = new WorkerError('nope');
    expect(plain).toBeInstanceOf(Error);
    expect(plain.name).toBe('WorkerError');
    expect(plain.message).toBe('nope');
    expect({ retryable: plain.retryable, unavailable: plain.unavailable }).toEqual({ retryable: true, unavailable: false });
    expect(new WorkerError('x', { retryable: false })).toMatchObject({ retryable: false, unavailable: false });
    expect(new WorkerError('x', { unavailable: true })).toMatchObject({ retryable: true, unavailable: true });
    expect(Object.keys(new WorkerError('x'))).toEqual(expect.arrayContaining(['retryable', 'unavailable']));
  });

  it('crosses a Cap\'n Web session with its message, retryable and unavailable', async () => {
    class Thrower extends RpcTarget {
      fail(kind: string): never {
        if (kind === 'outage') throw new WorkerError('database down', { unavailable: true });
        if (kind === 'fatal') throw new WorkerError('bad event', { retryable: false });
        throw new WorkerError('try again');
      }
    }
    const channel = new MessageChannel();
    newMessagePortRpcSession(channel.port1, new Thrower());
    const stub = newMessagePortRpcSession<Thrower>(channel.port2);
    try {
      const seen: Record<string, unknown>[] = [];
      for (const kind of ['outage', 'fatal', 'retry']) {
        try {
          await stub.fail(kind);
        } catch (error) {
          const e = error as Error & { retryable?: unknown; unavailable?: unknown };
          seen.push({ message: e.message, retryable: e.retryable, unavailable: e.unavailable });
        }
      }
      expect(seen).toEqual([
        { message: 'database down', retryable: true, unavailable: true },
        { message: 'bad event', retryable: false, unavailable: false },
        { message: 'try again', retryable: true, unavailable: false },
      ]);
    } finally {
      stub[Symbol.dispose]();
      channel.port1.close();
      channel.port2.close();
    }
  });
});

interface FakeRegistration {
  session: number;
  name: string;
  target: Record<string, unknown>;
  unregister: ReturnType<typeof vi.fn>;
}

/** An ItxConnection whose sessions the test starts by hand. */
function fakeConnection(options: { failFirst?: boolean } = {}) {
  const registrations: FakeRegistration[] = [];
  const listeners = new Set<(root: ItxRoot) => unknown>();
  let session = 0;
  const rootFor = (n: number) =>
    ({
      workers: {
        register: vi.fn(async (name: string, target: Record<string, unknown>) => {
          if (options.failFirst && n === 1) throw Object.assign(new Error('refused'), { code: 'INVALID_INPUT' });
          const registration = { session: n, name, target, unregister: vi.fn(async () => ({ unregistered: true })) };
          registrations.push(registration);
          return registration;
        }),
      },
    }) as unknown as ItxRoot;
  let current = rootFor(++session);
  const itx = {
    get root() {
      return current;
    },
    closed: false,
    close() {},
    onSession(listener: (root: ItxRoot) => unknown) {
      listeners.add(listener);
      void listener(current);
      return () => listeners.delete(listener);
    },
  } as unknown as ItxConnection;
  return {
    itx,
    registrations,
    /** A reconnect: a new session is announced. */
    newSession() {
      current = rootFor(++session);
      for (const listener of listeners) void listener(current);
    },
  };
}

const until = async (probe: () => boolean) => {
  for (let i = 0; i < 200 && !probe(); i++) await new Promise((resolve) => setTimeout(resolve, 1));
  expect(probe()).toBe(true);
};

describe('serveWorker', () => {
  it('registers its handlers as methods of one target (prototype methods, not own data) and is ready once registered', async () => {
    const fake = fakeConnection();
    const seen: ItxBatch[] = [];
    const served = serveWorker(fake.itx, 'billing', { processEventBatch: (batch) => void seen.push(batch) });
    await served.ready;
    expect(fake.registrations.map((r) => [r.session, r.name])).toEqual([[1, 'billing']]);
    const target = fake.registrations[0]!.target;
    expect(target).toBeInstanceOf(RpcTarget);
    expect(Object.keys(target)).toEqual([]);
    expect(typeof target.processEventBatch).toBe('function');
    (target.processEventBatch as (b: unknown) => unknown)({ events: [] });
    expect(seen).toEqual([{ events: [] }]);
  });

  it('registers again on every new session (reconnect), with the same target, and not after stop()', async () => {
    const fake = fakeConnection();
    const served = serveWorker(fake.itx, 'billing', { processEventBatch: () => ({ ok: true }) });
    await served.ready;
    fake.newSession();
    fake.newSession();
    await until(() => fake.registrations.length === 3);
    expect(fake.registrations.map((r) => r.session)).toEqual([1, 2, 3]);
    expect(new Set(fake.registrations.map((r) => r.target)).size).toBe(1);

    await served.stop();
    // The latest registration is ended; the replaced ones are the server's business.
    expect(fake.registrations[2]!.unregister).toHaveBeenCalledTimes(1);
    // A listener registers synchronously when a session is announced; after stop() none does.
    fake.newSession();
    expect(fake.registrations).toHaveLength(3);
  });

  it('ready rejects when the first registration is refused', async () => {
    const fake = fakeConnection({ failFirst: true });
    const served = serveWorker(fake.itx, 'bad name', { processEventBatch: () => ({ ok: true }) });
    await expect(served.ready).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('refuses a handler that is not a function', () => {
    const fake = fakeConnection();
    expect(() => serveWorker(fake.itx, 'w', { processEventBatch: 'nope' as never })).toThrow(TypeError);
  });
});
