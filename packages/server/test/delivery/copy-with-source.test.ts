/**
 * Copies in the source's commit (docs/architecture.md "Copies in the source's commit"): over one
 * SQLite database with group commit and `full` durability, a copy subscription writes its copies
 * in the group commit of the events it copies, so both are durable, shown and answered together;
 * the subscription's cursor moves only once the copies are durable; and a group commit that fails
 * after the copies were written loses nothing: the copies are made again.
 */
import { fdatasync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CommittedEvent } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStorage } from '../../src/adapters/sqlite/sqlite-storage.js';
import type { WalSyncFunctions } from '../../src/adapters/sqlite/wal-file.js';
import type { CopyBatch } from '../../src/core/copy-builder.js';
import { COPY_BATCH_EVENTS } from '../../src/engine/delivery/prepare.js';
import { createHarness, waitFor, type Harness } from './harness.js';
import { copySub, x } from './payloads.js';

let h: Harness;
let dir: string;
afterEach(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

async function sqliteHarness(walSync?: WalSyncFunctions): Promise<Harness> {
  dir = mkdtempSync(join(tmpdir(), 'rivulet-copy-with-source-'));
  return createHarness({ storage: new SqliteStorage(join(dir, 'data.sqlite'), { durability: 'full', ...(walSync && { walSync }) }) });
}

/** WAL syncs that, while `hold` is on, wait until released, as on a slow disk; `stop` lets them all go. */
function heldSyncs() {
  const held: (() => void)[] = [];
  let hold = false;
  const release = () => held.splice(0).forEach((sync) => sync());
  const walSync: WalSyncFunctions = { fdatasync: (fd, done) => (hold ? held.push(() => fdatasync(fd, done)) : fdatasync(fd, done)) };
  return {
    walSync,
    release,
    set hold(on: boolean) {
      hold = on;
    },
    stop: () => {
      hold = false;
      release();
    },
  };
}

const copiedOffsets = (events: CommittedEvent[]) => events.flatMap((e) => (e.source?.copiedFrom ?? []).slice(-1).map((hop) => hop.offset));
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('copies in the source commit', () => {
  it('a copy is durable, shown and acknowledged together with the event it copies, never before', async () => {
    h = await sqliteHarness();
    await h.configure('/a', copySub('k', '/r', { eventTypes: ['app/x'] }));
    await h.configure('/a', copySub('other', '/o', { eventTypes: ['app/never'] }));
    const [first] = await h.append('/a', x(1));
    await h.caughtUp('/a', 'k');
    await h.caughtUp('/a', 'other');
    expect(copiedOffsets(h.events('/r'))).toEqual([first!.offset]);

    const receiverHead = h.head('/r');
    const cursor = h.sub('/a', 'k').acknowledgedOffset;
    const pending = h.append('/a', x(2));
    // The copy has been written in this turn (its group commit follows), but nothing is durable yet.
    await nextTurn();
    expect(h.actor('/r').head).toBe(receiverHead + 1);
    expect(h.head('/r')).toBe(receiverHead);
    expect(h.sub('/a', 'k').acknowledgedOffset).toBe(cursor);
    // The subscription that matches nothing passed over the new event as it was written: it is
    // shown no further than the durable head.
    expect(h.sub('/a', 'other')).toMatchObject({ acknowledgedOffset: h.head('/a'), lag: 0 });
    const [second] = await pending;
    // As soon as the source's append is answered, its copy can be read on the receiving stream.
    expect(h.head('/r')).toBe(receiverHead + 1);
    expect(copiedOffsets(h.events('/r'))).toEqual([first!.offset, second!.offset]);
    await waitFor(() => h.sub('/a', 'k').acknowledgedOffset === second!.offset || undefined, 'the cursor past the durable copy');
    expect(h.sub('/a', 'k')).toMatchObject({ attempt: 0, lastError: null, inFlightDeadlineAt: null });
  });

  it('an event written while the copies before it wait for their sync is copied at once, not one sync later', async () => {
    const syncs = heldSyncs();
    h = await sqliteHarness(syncs.walSync);
    await h.configure('/a', copySub('k', '/r', { eventTypes: ['app/x'] }));
    await h.append('/a', x(1));
    await h.caughtUp('/a', 'k');
    const receiverHead = h.head('/r');
    syncs.hold = true;
    // Two appends in one turn: the second is written while the copy of the first is on its way.
    const second = h.append('/a', x(2));
    await Promise.resolve();
    const third = h.append('/a', x(3));
    try {
      await nextTurn();
      await nextTurn();
      // Both copies are written, neither is durable: the second's did not wait for the first's sync.
      expect(h.actor('/r').head).toBe(receiverHead + 2);
      expect(h.head('/r')).toBe(receiverHead);
    } finally {
      syncs.stop();
    }
    const [two, three] = [(await second)[0]!, (await third)[0]!];
    await h.caughtUp('/a', 'k');
    expect(copiedOffsets(h.events('/r')).slice(-2)).toEqual([two.offset, three.offset]);
  });

  it("a backlog of a batch or more waits for each batch's sync before the next is written; fewer owed are copied at once", async () => {
    const syncs = heldSyncs();
    h = await sqliteHarness(syncs.walSync);
    await h.configure('/a', copySub('k', '/r', { eventTypes: ['app/x'] }));
    await h.append('/a', x(0));
    await h.caughtUp('/a', 'k');
    const receiverHead = h.actor('/r').head;
    syncs.hold = true;
    // Two and a half batches written in one turn: the first batch leaves a batch and a half owed (a backlog).
    const batch = COPY_BATCH_EVENTS;
    const half = batch / 2;
    const appends = Array.from({ length: 5 }, (_, i) => h.append('/a', ...Array.from({ length: half }, (_, j) => x(1 + i * half + j))));
    try {
      for (let turn = 0; turn < 5; turn++) await nextTurn();
      expect(h.actor('/r').head).toBe(receiverHead + batch);
      // Its sync ends: the second batch is written, which leaves half a batch owed, copied at once after it.
      syncs.release();
      await waitFor(() => h.actor('/r').head === receiverHead + 5 * half || undefined, 'the last two batches written');
    } finally {
      syncs.stop();
    }
    const offsets = (await Promise.all(appends)).flat().map((e) => e.offset);
    await h.caughtUp('/a', 'k');
    expect(copiedOffsets(h.events('/r')).slice(-5 * half)).toEqual(offsets);
  });

  it('a chain of copies is written in one group commit: the last stream shows it once the first append is answered', async () => {
    h = await sqliteHarness();
    await h.configure('/a', copySub('ab', '/b'));
    await h.configure('/b', copySub('bc', '/c'));
    await h.append('/a', x(0));
    await h.caughtUp('/a', 'ab');
    await h.caughtUp('/b', 'bc');
    const [event] = await h.append('/a', x(1));
    const atC = h.events('/c').filter((e) => e.type === 'app/x');
    expect(atC.map((e) => (e.source?.copiedFrom ?? []).map((hop) => [hop.path, hop.offset]))).toContainEqual([
      ['/a', event!.offset],
      ['/b', h.events('/b').find((e) => e.source?.copiedFrom?.[0]?.offset === event!.offset)!.offset],
    ]);
  });

  it('a sender stopped while its copies wait for their sync writes nothing after the storage closed', async () => {
    h = await sqliteHarness();
    await h.configure('/a', copySub('k', '/r', { eventTypes: ['app/x'] }));
    await h.append('/a', x(1));
    await h.caughtUp('/a', 'k');
    const cursor = h.sub('/a', 'k').acknowledgedOffset;
    const source = h.actor('/a');
    const pending = h.append('/a', x(2));
    await nextTurn();
    expect(h.actor('/r').head).toBe(h.head('/r') + 1);
    // What the Node host does on shutdown: delivery stops, then the storage is flushed and closed.
    const closed = h.close();
    await pending;
    await closed;
    // The acknowledgement came after the sender stopped: it moved no cursor, and no delayed write of
    // the rows (250 ms later) reached the closed storage, which would throw from a timer.
    expect(source.subscriptions.get('k')!.cursor).toBe(cursor);
    await new Promise((resolve) => setTimeout(resolve, 400));
  });

  it('copies whose group commit fails are made again; the cursor never passed them', async () => {
    h = await sqliteHarness();
    const storage = h.storage as SqliteStorage;
    const offsets = (await h.append('/a', x(1), x(2), x(3))).map((e) => e.offset);
    // One group commit fails: a deferred foreign key broken in the copies' own turn.
    storage.db.pragma('foreign_keys = ON');
    storage.run(`CREATE TABLE parent (id INTEGER PRIMARY KEY)`);
    storage.run(`CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`);
    const receiver = h.actor('/r');
    const write = receiver.writeCopies.bind(receiver);
    const batches: CopyBatch[] = [];
    receiver.writeCopies = (batch: CopyBatch) => {
      batches.push(batch);
      const receipt = write(batch);
      if (batches.length === 1) storage.transaction(() => storage.run(`INSERT INTO child (id, parent) VALUES (1, 999)`));
      return receipt;
    };
    const epoch = storage.epoch;
    await h.configure('/a', copySub('k', '/r', { eventTypes: ['app/x'], start: 'beginning' }));
    await h.caughtUp('/a', 'k');
    expect(storage.epoch).toBe(epoch + 1);
    expect(batches.length).toBeGreaterThanOrEqual(2);
    expect(batches[0]!.events.map((e) => e.offset)).toEqual(offsets);
    // Exactly one copy per source event, in order, and the subscription healthy.
    expect(copiedOffsets(h.events('/r'))).toEqual(offsets);
    expect(h.sub('/a', 'k')).toMatchObject({ attempt: 0, lastError: null });
  });
});
