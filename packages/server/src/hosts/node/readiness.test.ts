import { describe, expect, it } from 'vitest';
import { MIN_FREE_BYTES, nodeReadiness } from './readiness.js';

const base = { dataDir: '/data', running: () => true, storageOpen: () => true };

describe('nodeReadiness (protocol §15.1)', () => {
  it('is ready when running, the database is open and the disk has room; exactly the minimum is enough', () => {
    expect(nodeReadiness({ ...base, freeBytes: () => MIN_FREE_BYTES })()).toEqual({ ready: true });
  });

  it('names the failed check otherwise', () => {
    expect(nodeReadiness({ ...base, running: () => false, freeBytes: () => MIN_FREE_BYTES })()).toEqual({ ready: false, reason: 'starting or shutting down' });
    expect(nodeReadiness({ ...base, storageOpen: () => false, freeBytes: () => MIN_FREE_BYTES })()).toEqual({ ready: false, reason: 'the database is not open' });
    expect(nodeReadiness({ ...base, freeBytes: () => MIN_FREE_BYTES - 1 })()).toEqual({
      ready: false,
      reason: 'the disk of /data is full or nearly (63 MiB free, 64 MiB needed)',
    });
    expect(
      nodeReadiness({
        ...base,
        freeBytes: () => {
          throw new Error('ENOENT: no such file or directory');
        },
      })(),
    ).toEqual({ ready: false, reason: 'cannot read the free space of /data: ENOENT: no such file or directory' });
  });

  it('is not ready once the storage has failed, and says why', () => {
    const reason = 'storage failed: the write-ahead log could not be synced to disk (EIO); nothing more is read or written until the server restarts';
    expect(nodeReadiness({ ...base, storageFailure: () => reason, freeBytes: () => MIN_FREE_BYTES })()).toEqual({ ready: false, reason });
    expect(nodeReadiness({ ...base, storageFailure: () => null, freeBytes: () => MIN_FREE_BYTES })()).toEqual({ ready: true });
  });

  it('reads the real free space of a folder by default', () => {
    expect(nodeReadiness({ ...base, dataDir: process.cwd() })()).toEqual({ ready: true });
  });
});
