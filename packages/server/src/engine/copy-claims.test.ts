/**
 * Copies' idempotency keys claimed as ranges (storage format 7, copy-claims.ts, docs/
 * architecture.md "Copy keys are claimed as ranges"): a batch of copies is one claim row, a
 * redelivery meets it whole or in part, a copy of a claimed range is found by its key, keys that
 * format 6 left in event_keys are still met, and a deleted stream takes its claims along. Over both
 * test adapters. (A redelivered batch end to end: the copy e2e and crash suites.)
 */
import { afterEach, describe, expect, it } from 'vitest';
import { testStorages } from '../../test/helpers/test-storages.js';
import type { SqlStorage } from '../ports/storage.js';
import { ClaimsBuilder, splitCopyKey, type CopyKey } from './copy-claims.js';
import { EventRows, type EventRowInput } from './event-rows.js';
import { openSchema } from './schema.js';
import { BASE_RUN } from './key-runs.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

const HEAD = 'rivulet-internal/copy:["sub",3,null,"/src","id-1",';
const OTHER_RUN = 'rivulet-internal/copy:["sub",9,null,"/src","id-1",';
const copyKey = (source: number, head = HEAD) => `${head}${source}]`;

/** A copy row as the engine stores it: its key in its JSON. */
function copy(offset: number, source: number, head = HEAD): EventRowInput {
  const key = copyKey(source, head);
  return { offset, type: 't', ephemeral: false, idempotencyKey: key, createdMs: 0, json: JSON.stringify({ offset, idempotencyKey: key }) };
}

/** `count` copies of source offsets from `source` on, written from `offset` on. */
function copies(offset: number, source: number, count: number, head = HEAD): EventRowInput[] {
  return Array.from({ length: count }, (_, i) => copy(offset + i, source + i, head));
}

/** Runs `fn` in a transaction and undoes it whatever it answers (as the engine undoes a refused batch); answers what fn answered. */
function tried<T>(storage: SqlStorage, fn: () => T): T {
  let answer: T | undefined;
  try {
    storage.transaction(() => {
      answer = fn();
      throw new Error('undone');
    });
  } catch (error) {
    if ((error as Error).message !== 'undone') throw error;
  }
  return answer as T;
}

/** The claims of copy rows (their keys cut in two, their stored offsets) in write order. */
function claimsOf(rows: ReadonlyArray<{ key: CopyKey; offset: number }>) {
  const builder = new ClaimsBuilder();
  for (const { key, offset } of rows) builder.add(key.head, key.offset, offset);
  return builder.claims;
}

const claims = (storage: SqlStorage) => storage.exec(`SELECT sid, head, src_first, count, ofs_first FROM copy_claims ORDER BY sid, head, src_first`);
const storedKeys = (storage: SqlStorage) => storage.exec<{ n: number }>(`SELECT count(*) AS n FROM events WHERE idem IS NOT NULL`)[0]!.n;

describe('copy keys cut in two (splitCopyKey)', () => {
  it('a copy key is its run head and its source offset; anything else is an ordinary key', () => {
    expect(splitCopyKey(copyKey(17))).toEqual({ head: HEAD, offset: 17 });
    expect(splitCopyKey(`rivulet-internal/copy:["a,b",1,"p","/x,y","id",9007199254740991]`)).toEqual({
      head: 'rivulet-internal/copy:["a,b",1,"p","/x,y","id",',
      offset: 9007199254740991,
    });
    for (const key of ['order-7', 'rivulet-internal/drop:["x"]', `${HEAD}0]`, `${HEAD}07]`, `${HEAD}1a]`, `${HEAD}]`, `${HEAD}12`, `${HEAD}9007199254740993]`]) {
      expect(splitCopyKey(key)).toBeUndefined();
    }
  });

  it('claims follow the rows: a new one where the run, the source offset or the stored offset does not go on by one', () => {
    const rows = [
      { key: { head: HEAD, offset: 1 }, offset: 10 },
      { key: { head: HEAD, offset: 2 }, offset: 11 },
      { key: { head: HEAD, offset: 4 }, offset: 12 },
      { key: { head: HEAD, offset: 5 }, offset: 14 },
      { key: { head: OTHER_RUN, offset: 6 }, offset: 15 },
    ];
    expect(claimsOf(rows)).toEqual([
      { head: HEAD, srcFirst: 1, count: 2, ofsFirst: 10 },
      { head: HEAD, srcFirst: 4, count: 1, ofsFirst: 12 },
      { head: HEAD, srcFirst: 5, count: 1, ofsFirst: 14 },
      { head: OTHER_RUN, srcFirst: 6, count: 1, ofsFirst: 15 },
    ]);
    expect(() => claimsOf([rows[1]!, rows[0]!])).toThrow('storage: copy key of source offset 1 follows 2 in one batch');
  });

  it('a run left and taken up again in one batch must go on past where it was left', () => {
    const row = (head: string, source: number, offset: number) => ({ key: { head, offset: source }, offset });
    expect(claimsOf([row(HEAD, 1, 10), row(OTHER_RUN, 1, 11), row(HEAD, 2, 12)])).toEqual([
      { head: HEAD, srcFirst: 1, count: 1, ofsFirst: 10 },
      { head: OTHER_RUN, srcFirst: 1, count: 1, ofsFirst: 11 },
      { head: HEAD, srcFirst: 2, count: 1, ofsFirst: 12 },
    ]);
    expect(() => claimsOf([row(HEAD, 5, 10), row(OTHER_RUN, 1, 11), row(HEAD, 5, 12)])).toThrow('storage: copy key of source offset 5 follows 5 in one batch');
    expect(() => claimsOf([row(HEAD, 5, 10), row(OTHER_RUN, 1, 11), row(OTHER_RUN, 2, 12), row(HEAD, 3, 13)])).toThrow('storage: copy key of source offset 3 follows 5 in one batch');
  });
});

for (const adapter of testStorages(cleanups, 'rivulet-copy-claims-')) {
  describe(`copy keys claimed as ranges (${adapter.name})`, () => {
    async function open(): Promise<{ storage: SqlStorage; rows: EventRows }> {
      const storage = await adapter.open();
      openSchema(storage);
      return { storage, rows: new EventRows(storage, undefined) };
    }

    it('a batch of copies is one claim; its rows keep their keys in their JSON only', async () => {
      const { storage, rows } = await open();
      expect(rows.insertIfNewKeys(1, copies(2, 101, 1000))).toBe(true);
      expect(claims(storage)).toEqual([{ sid: 1, head: HEAD, src_first: 101, count: 1000, ofs_first: 2 }]);
      expect(storedKeys(storage)).toBe(0);
      expect(storage.exec(`SELECT count(*) AS n FROM event_keys`)).toEqual([{ n: 0 }]);
      expect(rows.byKey(1, copyKey(600))).toEqual({ offset: 501, idempotencyKey: copyKey(600) });
      expect(rows.byKey(1, copyKey(100))).toBeUndefined();
      expect(rows.byKey(1, copyKey(1101))).toBeUndefined();
    });

    it('a batch that goes on from the one before in both offsets lengthens its claim; a lone copy too; a gap starts a new one', async () => {
      const { storage, rows } = await open();
      expect(rows.insertIfNewKeys(1, copies(2, 1, 1000))).toBe(true);
      expect(rows.insertIfNewKeys(1, copies(1002, 1001, 1000))).toBe(true);
      rows.insertAll(1, [copy(2002, 2001)]);
      expect(rows.insertIfNewKeys(1, [copy(2003, 2002)])).toBe(true);
      expect(claims(storage)).toEqual([{ sid: 1, head: HEAD, src_first: 1, count: 2002, ofs_first: 2 }]);
      // Another event between (the stream's own), or source events passed over: new claims.
      rows.insert(1, { offset: 2004, type: 't', ephemeral: false, idempotencyKey: undefined, createdMs: 0, json: '{}' });
      expect(rows.insertIfNewKeys(1, copies(2005, 2003, 2))).toBe(true);
      expect(rows.insertIfNewKeys(1, copies(2007, 2010, 2))).toBe(true);
      expect(claims(storage)).toEqual([
        { sid: 1, head: HEAD, src_first: 1, count: 2002, ofs_first: 2 },
        { sid: 1, head: HEAD, src_first: 2003, count: 2, ofs_first: 2005 },
        { sid: 1, head: HEAD, src_first: 2010, count: 2, ofs_first: 2007 },
      ]);
      for (const source of [1, 1000, 1001, 2002, 2004, 2011]) expect(tried(storage, () => rows.insertIfNewKeys(1, [copy(3000, source)]))).toBe(false);
      expect(rows.byKeys(1, [copyKey(1500), copyKey(2011), copyKey(2005)])).toEqual(
        new Map([
          [copyKey(1500), { offset: 1501, idempotencyKey: copyKey(1500) }],
          [copyKey(2011), { offset: 2008, idempotencyKey: copyKey(2011) }],
        ]),
      );
    });

    it('a redelivery is refused whether it repeats the batch, overlaps either end or lies inside it; the next batch is new', async () => {
      const { storage, rows } = await open();
      expect(rows.insertIfNewKeys(1, copies(1, 11, 10))).toBe(true); // source 11..20
      for (const [source, count] of [[11, 10], [5, 7], [20, 5], [14, 2], [1, 30]] as const) {
        expect(tried(storage, () => rows.insertIfNewKeys(1, copies(11, source, count)))).toBe(false);
      }
      expect(rows.insertIfNewKeys(1, copies(11, 1, 10))).toBe(true); // source 1..10, before the claim
      expect(rows.insertIfNewKeys(1, copies(21, 21, 3))).toBe(true);
      // The same source offsets of another run are other keys.
      expect(rows.insertIfNewKeys(1, copies(24, 11, 10, OTHER_RUN))).toBe(true);
      // And of the same run in another stream.
      expect(rows.insertIfNewKeys(2, copies(1, 11, 10))).toBe(true);
      expect(claims(storage)).toHaveLength(5);
    });

    it('a batch decided with its keys looked up (a new stream, a refused batch) claims what it writes, and finds what is stored', async () => {
      const { storage, rows } = await open();
      rows.insertAll(1, copies(1, 1, 3));
      expect(claims(storage)).toEqual([{ sid: 1, head: HEAD, src_first: 1, count: 3, ofs_first: 1 }]);
      expect(storedKeys(storage)).toBe(0);
      expect(tried(storage, () => rows.insertIfNewKeys(1, [copy(4, 3), copy(5, 4)]))).toBe(false);
      expect(() => rows.insertAll(1, [copy(4, 3)])).toThrow(`storage: idempotency key ${JSON.stringify(copyKey(3))} is stored in stream 1 already`);
      // The repeat left out, as a decision that looked the keys up writes it.
      rows.insertAll(1, [copy(4, 4), copy(5, 5)]);
      expect(rows.byKeys(1, [copyKey(1), copyKey(5), copyKey(6), 'plain'])).toEqual(
        new Map([
          [copyKey(1), { offset: 1, idempotencyKey: copyKey(1) }],
          [copyKey(5), { offset: 5, idempotencyKey: copyKey(5) }],
        ]),
      );
    });

    it('a batch mixing copies and ordinary keys claims each its way, and both are met again', async () => {
      const { storage, rows } = await open();
      const audit: EventRowInput = { offset: 4, type: 't', ephemeral: false, idempotencyKey: 'rivulet-internal/drop:x', createdMs: 0, json: '{"offset":4}' };
      expect(rows.insertIfNewKeys(1, [...copies(1, 1, 3), audit])).toBe(true);
      expect(storage.exec(`SELECT idem FROM events WHERE idem IS NOT NULL`)).toEqual([{ idem: 'rivulet-internal/drop:x' }]);
      expect(tried(storage, () => rows.insertIfNewKeys(1, [copy(5, 4), { ...audit, offset: 6 }]))).toBe(false);
      expect(tried(storage, () => rows.insertIfNewKeys(1, [copy(5, 3), copy(6, 4)]))).toBe(false);
    });

    it('keys of a run that format 6 left in event_keys are still met; the run goes on claimed as ranges', async () => {
      const { storage, rows } = await open();
      // As format 6 wrote a copy: the key in the row's idem column and in event_keys (the upgrade
      // to format 10 put it in the base run).
      storage.transaction(() => {
        const old = copy(1, 1);
        storage.run(`INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (1, 1, 't', 0, ?, 0, ?)`, old.idempotencyKey!, old.json);
        storage.run(`INSERT INTO event_keys (sid, run, idem, ofs) VALUES (1, ${BASE_RUN}, ?, 1)`, old.idempotencyKey!);
      });
      const fresh = new EventRows(storage, undefined);
      expect(tried(storage, () => fresh.insertIfNewKeys(1, [copy(2, 1), copy(3, 2)]))).toBe(false);
      // New offsets of that run: refused by the quick path (the run has old keys), written once looked up.
      expect(tried(storage, () => fresh.insertIfNewKeys(1, [copy(2, 2), copy(3, 3)]))).toBe(false);
      expect(() => fresh.insertAll(1, [copy(2, 1)])).toThrow('is stored in stream 1 already');
      fresh.insertAll(1, [copy(2, 2), copy(3, 3)]);
      expect(claims(storage)).toEqual([{ sid: 1, head: HEAD, src_first: 2, count: 2, ofs_first: 2 }]);
      expect(fresh.byKeys(1, [copyKey(1), copyKey(3)])).toEqual(
        new Map([
          [copyKey(1), { offset: 1, idempotencyKey: copyKey(1) }],
          [copyKey(3), { offset: 3, idempotencyKey: copyKey(3) }],
        ]),
      );
      // Another run has no old key: its batches take the quick path.
      expect(fresh.insertIfNewKeys(1, copies(4, 1, 3, OTHER_RUN))).toBe(true);
      void rows;
    });

    it('a key of a run that format 6 wrote after the last move (in its row, and in the base run) is met by a batch that repeats it, before and after a move', async () => {
      const { storage } = await open();
      // As format 6 wrote a copy past the watermark: the key in the row's idem column, not yet
      // moved; the upgrade to format 10 put it in the base run as well (migrations.test.ts).
      storage.transaction(() => {
        const old = copy(1, 1);
        storage.run(`INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (1, 1, 't', 0, ?, 0, ?)`, old.idempotencyKey!, old.json);
        storage.run(`INSERT INTO event_keys (sid, run, idem, ofs) VALUES (1, ${BASE_RUN}, ?, 1)`, old.idempotencyKey!);
      });
      const fresh = new EventRows(storage, undefined);
      expect(tried(storage, () => fresh.insertIfNewKeys(1, [copy(2, 1), copy(3, 2)]))).toBe(false);
      expect(fresh.byKey(1, copyKey(1))).toEqual({ offset: 1, idempotencyKey: copyKey(1) });
      // Once moved (into a run of event_keys), the copy run is still one with old keys, as in the test above.
      fresh.keys.move();
      expect(tried(storage, () => fresh.insertIfNewKeys(1, [copy(2, 1), copy(3, 2)]))).toBe(false);
      expect(fresh.insertIfNewKeys(1, copies(2, 1, 3, OTHER_RUN))).toBe(true);
    });

    it('a destroyed stream takes its claims along, in one go or in chunks counted with the rows', async () => {
      const { storage, rows } = await open();
      rows.insertIfNewKeys(1, copies(1, 1, 4));
      rows.insertIfNewKeys(1, copies(5, 10, 2, OTHER_RUN));
      rows.insertIfNewKeys(2, copies(1, 1, 2));
      expect(rows.deleteSome(1, 1)).toBe(1);
      expect(claims(storage)).toHaveLength(2);
      expect(rows.deleteSome(1, 3)).toBe(3);
      expect(claims(storage)).toEqual([{ sid: 2, head: HEAD, src_first: 1, count: 2, ofs_first: 1 }]);
      rows.deleteAll(2);
      expect(claims(storage)).toEqual([]);
      // A stream given the same sid starts with no claim.
      expect(rows.insertIfNewKeys(2, copies(1, 1, 2))).toBe(true);
    });

    it('a claim is found only where its row carries the key', async () => {
      const { storage, rows } = await open();
      rows.insertIfNewKeys(1, copies(1, 1, 2));
      storage.transaction(() => storage.run(`UPDATE events SET body = '{"offset":2}' WHERE sid = 1 AND ofs = 2`));
      expect(rows.byKey(1, copyKey(2))).toBeUndefined();
      expect(rows.byKeys(1, [copyKey(1), copyKey(2)])).toEqual(new Map([[copyKey(1), { offset: 1, idempotencyKey: copyKey(1) }]]));
    });
  });
}
