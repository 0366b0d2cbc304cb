/**
 * Copies stored as parts (storage format 8, copy-rows.ts): for generated source events, paths and
 * types, the copies a batch writes read back (SQL's EVENT_BODY: single and range reads, the joined
 * read, the read cache's chunk, key lookups) exactly as the text the append made, which is what
 * `copyText` makes of the parts; a copy that does not qualify (a type JSON escapes, a transform, a
 * second hop) keeps its whole text. Over both test adapters.
 */
import type { CommittedEvent, CopyHop } from '@rivulet/contract';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { appendInput } from '../../test/helpers/json-arbitrary.js';
import { testStorages } from '../../test/helpers/test-storages.js';
import type { AppendInput } from '../core/append-input.js';
import { buildEvent } from '../core/decide-append.js';
import type { CopyBatch, CopyBatchEvent } from '../core/copy-builder.js';
import { unshaped } from '../core/filter.js';
import { systemTimer } from '../ports/timer.js';
import { StreamActor } from './actor.js';
import { defaultEngineConfig } from './config.js';
import { copyText } from './copy-rows.js';
import { rememberJson, storedFieldsJson } from './event-json.js';
import { CHUNK_SEPARATOR, sqlChunkSource } from './read-cache.js';
import { openSchema } from './schema.js';
import { StreamStore } from './stream-store.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

const SOURCE_TIME = '2026-12-06T10:00:00.000Z';

/** A source event as the sender has it: parsed from its stored text, the text riding along. */
function sourceEvent(offset: number, input: AppendInput): CommittedEvent {
  const text = JSON.stringify(buildEvent('/src', offset, SOURCE_TIME, input));
  const event = JSON.parse(text) as CommittedEvent;
  rememberJson(event, text);
  return event;
}

/** What a delivered source event keeps of a generated input: its type, payload and metadata. */
function fieldsOf(input: AppendInput): AppendInput {
  const fields: AppendInput = { type: input.type };
  if (input.payload !== undefined) fields.payload = input.payload;
  if (input.metadata !== undefined) fields.metadata = input.metadata;
  return fields;
}

/** The batch event the sender makes of it: without a transform, its stored fields ride along. */
function batchEvent(event: CommittedEvent): CopyBatchEvent {
  const e: CopyBatchEvent = { offset: event.offset, type: event.type, createdAt: event.createdAt, shaped: unshaped(event) };
  if (event.source) e.source = event.source;
  const fields = storedFieldsJson(event);
  if (fields !== undefined) e.fieldsJson = fields;
  return e;
}

function batch(receivingPath: string, events: CopyBatchEvent[], subscriptionKey = 'sub "one"'): CopyBatch {
  return {
    projectId: 'p',
    path: '/src',
    streamId: 'src-id',
    streamCreatedAt: '2026-12-06T09:00:00.000Z',
    cursorChangedAtSourceOffset: 1,
    subscriptionKey,
    receivingStreamPath: receivingPath,
    events,
  };
}

for (const adapter of testStorages(cleanups, 'rivulet-copy-rows-')) {
  describe(`copies stored as parts (${adapter.name})`, () => {
    async function open() {
      const storage = await adapter.open();
      openSchema(storage);
      let now = Date.parse('2026-12-06T11:00:00.000Z');
      let ids = 0;
      const store = new StreamStore(storage);
      const deps = {
        store,
        clock: { now: () => now++ },
        random: { next: () => 0.5, uuid: () => `00000000-0000-4000-8000-${(++ids).toString(16).padStart(12, '0')}` },
        timer: systemTimer,
        config: defaultEngineConfig,
      };
      return { storage, store, actor: (path: string) => new StreamActor('p', path, deps) };
    }

    /** Every way a stored row is read, against the texts the appends answered. */
    function expectReadBack(store: StreamStore, sid: number, written: Map<number, string>): void {
      const offsets = [...written.keys()];
      const range = store.events.range(sid, { afterOffset: 0, beforeOffset: 1e9, limit: 1e6, includeEphemeral: true });
      const byOffset = new Map(range.map((r) => [r.offset, r.json]));
      for (const [offset, json] of written) expect(byOffset.get(offset)).toBe(json);
      const joined = store.events.rangeJoined(sid, { afterOffset: 0, beforeOffset: 1e9, limit: 1e6, includeEphemeral: true });
      expect(joined.json).toBe(range.map((r) => r.json).join(','));
      const chunk = sqlChunkSource(store.storage).rows(sid, 1, 1e9);
      expect(chunk.texts.split(CHUNK_SEPARATOR)).toEqual(range.map((r) => r.json));
      for (const offset of offsets) {
        const event = JSON.parse(written.get(offset)!) as CommittedEvent;
        if (event.idempotencyKey !== undefined) expect(store.events.byKey(sid, event.idempotencyKey)).toEqual(event);
      }
    }

    it('generated copies read back as the append wrote them, from parts, by every read', async () => {
      const { storage, store, actor } = await open();
      let round = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(appendInput, { minLength: 1, maxLength: 6 }), fc.string({ unit: 'binary', maxLength: 8 }), async (inputs, name) => {
          const path = `/dst/${round++}/${name.replace(/[^a-z0-9é]/gi, '')}`;
          // A generated type is any Unicode, most of it astral (surrogate pairs), which a copy
          // stored as parts cannot hold; one event with a plain type makes every batch have parts
          // (without it a run of 60 had none about once in fifty).
          const plain = { ...inputs[0]!, type: 'app/plain' };
          const events = [...inputs, plain].map((input, i) => batchEvent(sourceEvent(10 + i, fieldsOf(input))));
          const receiver = actor(path);
          const committed = await receiver.receiveCopies(batch(path, events));
          expect(committed.appended).toBe(events.length);
          const sid = receiver.sid!;
          const read = receiver.read({ afterOffset: 0, limit: 100, includeEphemeral: false }).events;
          const written = new Map(read.map((e) => [e.offset, JSON.stringify(e)]));
          expectReadBack(store, sid, written);
        }),
        { numRuns: 60 },
      );
      // Parts were written: every type that JSON leaves as it stands (the plain one of each batch at least).
      const parts = storage.exec<{ n: number }>(`SELECT count(*) AS n FROM events WHERE copy_run IS NOT NULL`)[0]!.n;
      expect(parts).toBeGreaterThan(0);
    });

    it('a part row holds the times and the fields; copyText makes the whole of it; the run texts are stored once per run', async () => {
      const { storage, store, actor } = await open();
      const dst = actor('/dst');
      const events = [1, 2, 3].map((n) => batchEvent(sourceEvent(n, { type: 'app/x', payload: { n, s: 'é\u2028"' }, metadata: { m: n } })));
      await dst.receiveCopies(batch('/dst', events));
      await dst.receiveCopies(batch('/dst', [batchEvent(sourceEvent(4, { type: 'app/x', payload: { n: 4 } }))]));
      const rows = storage.exec<{ ofs: number; type: string; body: string; src_ofs: number; copy_run: number }>(
        `SELECT ofs, type, body, src_ofs, copy_run FROM events WHERE copy_run IS NOT NULL ORDER BY ofs`,
      );
      expect(rows.map((r) => [r.ofs, r.src_ofs])).toEqual([
        [2, 1],
        [3, 2],
        [4, 3],
        [5, 4],
      ]);
      const read = dst.read({ afterOffset: 1, limit: 10, includeEphemeral: false }).events;
      expect(rows[0]!.body).toBe(`${read[0]!.createdAt}${SOURCE_TIME},"payload":{"n":1,"s":"é\u2028\\""},"metadata":{"m":1}`);
      expect(storage.exec(`SELECT count(*) AS n FROM copy_runs`)).toEqual([{ n: 1 }]);
      const run = storage.exec<{ head: string; key_text: string; hop_head: string; hop_tail: string }>(`SELECT head, key_text, hop_head, hop_tail FROM copy_runs`)[0]!;
      for (const [i, row] of rows.entries()) {
        const texts = { head: run.head, key: run.key_text, hopHead: run.hop_head, hopTail: run.hop_tail };
        expect(copyText(texts, row)).toBe(JSON.stringify(read[i]));
      }
      expectReadBack(store, dst.sid!, new Map(read.map((e) => [e.offset, JSON.stringify(e)])));
      expect(store.events.storedBytes(dst.coreState!.streamId, 1, 5)).toBe(read.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e)), 0));
      // Format 9 (event-index.ts): the batches entered their copies in event_offsets at once; only
      // the stream's created event is in the tail.
      expect(storage.execRows(`SELECT ofs FROM event_offsets WHERE sid = ? ORDER BY ofs`, dst.sid!)).toEqual([[2], [3], [4], [5]]);
      expect(storage.execRows(`SELECT ofs FROM tail_offsets WHERE sid = ?`, dst.sid!)).toEqual([[1]]);
      // An offset a copy took is refused again.
      expect(() => store.events.insert(dst.sid!, { offset: 5, type: 'x', ephemeral: false, idempotencyKey: undefined, createdMs: 0, json: '{}' })).toThrow(
        'storage: offset 5 of stream',
      );
    });

    it('a type JSON escapes, a transformed type or a second hop keeps its whole text', async () => {
      const { storage, store, actor } = await open();
      const dst = actor('/dst');
      const quoted = batchEvent(sourceEvent(1, { type: 'app/"q"', payload: { n: 1 } }));
      const renamed = { ...batchEvent(sourceEvent(2, { type: 'app/x', payload: { n: 2 } })), shaped: { type: 'app/y', payload: { n: 2 } } };
      delete renamed.fieldsJson;
      const hop: CopyHop = { projectId: 'p', path: '/far', streamId: 'f', streamCreatedAt: SOURCE_TIME, offset: 9, type: 'app/x', createdAt: SOURCE_TIME, subscriptionKey: 'k', cursorChangedAtSourceOffset: 1 };
      const second = batchEvent(sourceEvent(3, { type: 'app/x', payload: { n: 3 }, source: { copiedFrom: [hop] } }));
      await dst.receiveCopies(batch('/dst', [quoted, renamed, second]));
      expect(storage.exec(`SELECT ofs, copy_run FROM events WHERE ofs > 1 ORDER BY ofs`)).toEqual([
        { ofs: 2, copy_run: null },
        { ofs: 3, copy_run: null },
        { ofs: 4, copy_run: null },
      ]);
      const read = dst.read({ afterOffset: 1, limit: 10, includeEphemeral: false }).events;
      expectReadBack(store, dst.sid!, new Map(read.map((e) => [e.offset, JSON.stringify(e)])));
    });

    it('a stream read before its first copy stored as parts reads that copy whole, in every reader of the same database', async () => {
      const { storage, store, actor } = await open();
      const dst = actor('/dst');
      await dst.append([{ type: 'app/own', payload: { n: 0 } }], 'public');
      const other = new StreamStore(storage);
      const sid = dst.sid!;
      const all = { afterOffset: 0, beforeOffset: 100, limit: 100, includeEphemeral: false };
      // Both stores have read the stream while it had no parts (reads without the join).
      expect(store.events.range(sid, all)).toHaveLength(2);
      expect(other.events.range(sid, all)).toHaveLength(2);
      await dst.receiveCopies(batch('/dst', [batchEvent(sourceEvent(7, { type: 'app/x', payload: { n: 7 } }))]));
      expect(storage.exec(`SELECT count(*) AS n FROM events WHERE copy_run IS NOT NULL`)).toEqual([{ n: 1 }]);
      const copy = JSON.stringify(dst.read({ afterOffset: 2, limit: 1, includeEphemeral: false }).events[0]);
      for (const s of [store, other]) {
        expect(s.events.range(sid, all).map((r) => r.json)[2]).toBe(copy);
        expect(s.events.rangeJoined(sid, all).json.endsWith(copy)).toBe(true);
      }
    });

    it('a destroyed stream takes its runs along with its last rows', async () => {
      const { storage, store, actor } = await open();
      const dst = actor('/dst');
      await dst.receiveCopies(batch('/dst', [1, 2, 3].map((n) => batchEvent(sourceEvent(n, { type: 'app/x', payload: { n } })))));
      const sid = dst.sid!;
      expect(store.events.deleteSome(sid, 2)).toBe(2);
      expect(storage.exec(`SELECT count(*) AS n FROM copy_runs`)).toEqual([{ n: 1 }]);
      while (store.events.deleteSome(sid, 2) > 0);
      expect(storage.exec(`SELECT count(*) AS n FROM copy_runs`)).toEqual([{ n: 0 }]);
    });
  });
}
