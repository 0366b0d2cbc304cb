/**
 * The read barrier with the SQLite adapter's sync off the event loop (decision 010): between a
 * group's COMMIT and the end of its sync, its rows are in the database but not durable. An append
 * is answered only after the sync; reads, the stream's state and the answer to the append all stay
 * at what is durable; and a failed sync fails the append and stops the storage with UNAVAILABLE.
 * The WAL's fdatasync is held by the test (it runs for real when the test lets it end).
 */
import { fdatasyncSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RivuletError } from '@rivulet/contract';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStorage } from '../src/adapters/sqlite/sqlite-storage.js';
import { composeEngine, localDirectory, type Engine } from '../src/engine/compose.js';
import { defaultEngineConfig } from '../src/engine/config.js';
import { createServerMetrics } from '../src/engine/metrics.js';
import { copyReceiver } from '../src/engine/receivers/copy.js';
import { openSchema } from '../src/engine/schema.js';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

let dir: string;
let storage: SqliteStorage;
let held: Array<{ fd: number; done: (error: NodeJS.ErrnoException | null) => void }>;
let engine: Engine;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rivulet-durable-reads-'));
  held = [];
  storage = new SqliteStorage(join(dir, 'data.sqlite'), {
    backgroundSyncMs: 0,
    walSync: { fdatasync: (fd, done) => held.push({ fd, done }) },
  });
  openSchema(storage);
  let n = 0;
  engine = composeEngine({
    storage,
    alarms: { create: () => ({ set: () => undefined, clear: () => undefined }) },
    timer: { set: () => () => undefined },
    clock: { now: () => Date.now() },
    random: { next: () => 0.5, uuid: () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}` },
    config: defaultEngineConfig,
    metrics: createServerMetrics(),
    logger: { error: () => undefined },
    receivers: { 'copy-to-stream': copyReceiver(localDirectory(() => engine.registry)) },
  });
});

afterEach(() => {
  storage.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs turns until the append's group has committed and its sync is held. */
async function untilHeld(): Promise<void> {
  for (let i = 0; i < 100 && held.length === 0; i++) await turn();
  expect(held).toHaveLength(1);
}

function release(error: NodeJS.ErrnoException | null = null): void {
  const sync = held.shift()!;
  if (!error) fdatasyncSync(sync.fd);
  sync.done(error);
}

const event = (n: number) => ({ type: 'app/x', payload: { n } });

describe('reads while a commit is not durable yet', () => {
  it('the append waits for the sync; reads and the state stay at the durable head until it ends', async () => {
    const first = engine.service.append('p', '/a', [event(1)]);
    await untilHeld();
    release();
    const head = (await first).at(-1)!.offset;

    let answered = false;
    const second = engine.service.append('p', '/a', [event(2)]).then((events) => {
      answered = true;
      return events;
    });
    await untilHeld();
    // Committed: the row is in the database.
    expect(storage.exec<{ n: number }>(`SELECT max(ofs) AS n FROM events`)[0]!.n).toBe(head + 1);
    // Not durable: no answer, and nothing past the durable head is shown.
    expect(answered).toBe(false);
    const read = await engine.service.read('p', '/a', { afterOffset: 0, limit: 100, includeEphemeral: false });
    expect(read.streamMaxOffset).toBe(head);
    expect(read.events.at(-1)!.offset).toBe(head);
    const state = await engine.service.state('p', '/a');
    expect(state.core?.maxOffset).toBe(head);
    release();
    expect((await second).map((e) => e.offset)).toEqual([head + 1]);
    expect((await engine.service.state('p', '/a')).core?.maxOffset).toBe(head + 1);
    expect((await engine.service.read('p', '/a', { afterOffset: 0, limit: 100, includeEphemeral: false })).streamMaxOffset).toBe(head + 1);
  });

  it('a failed sync fails the append with UNAVAILABLE; every later append and read is refused with the reason', async () => {
    const first = engine.service.append('p', '/a', [event(1)]);
    await untilHeld();
    release();
    await first;
    const second = engine.service.append('p', '/a', [event(2)]).catch((e: unknown) => e);
    await untilHeld();
    release(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    const error = await second;
    expect(error).toBeInstanceOf(RivuletError);
    expect(error).toMatchObject({ code: 'UNAVAILABLE', message: 'storage failed to commit; the append was not stored' });
    const reason = 'storage failed: the write-ahead log could not be synced to disk (EIO); nothing more is read or written until the server restarts';
    await expect(engine.service.append('p', '/a', [event(3)])).rejects.toMatchObject({ code: 'UNAVAILABLE', message: reason });
    await expect(engine.service.read('p', '/a', { afterOffset: 0, limit: 100, includeEphemeral: false })).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      message: reason,
    });
    await expect(engine.service.append('p', '/b', [event(1)])).rejects.toMatchObject({ code: 'UNAVAILABLE', message: reason });
    expect(held).toHaveLength(0);
  });
});
