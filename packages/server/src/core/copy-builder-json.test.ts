/**
 * A copy's stored text spliced from the source's stored payload and metadata (copy-builder.ts
 * `fieldsJson` → AppendInput `jsonAfterType` → decide-append.ts): byte for byte what serialising the
 * copy event writes, whatever the characters in the stamp, the types and the fields.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planCopies, type CopyBatch, type CopyBatchEvent } from './copy-builder.js';
import type { ShapedEvent } from './filter.js';
import { Stream } from '../../test/helpers/decide-stream.js';
import { jsonObject, jsonText } from '../../test/helpers/json-arbitrary.js';

/** The payload and metadata members of a shaped event as JSON.stringify writes them (what the source stored). */
function fieldsOf(shaped: ShapedEvent): string {
  return JSON.stringify(shaped).slice(`{"type":${JSON.stringify(shaped.type)}`.length, -1);
}

const text = jsonText;
const object = jsonObject;
const shaped: fc.Arbitrary<ShapedEvent> = fc.record({ type: fc.string({ unit: 'binary', minLength: 1, maxLength: 10 }), payload: object, metadata: object }, { requiredKeys: ['type'] });
const stamp = fc.record({
  projectId: fc.option(text, { nil: null }),
  path: text.map((p) => `/${p}`),
  streamId: text,
  streamCreatedAt: text,
  subscriptionKey: text,
  cursorChangedAtSourceOffset: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
});
const events = fc
  .array(fc.record({ gap: fc.integer({ min: 1, max: 2 ** 40 }), type: text, createdAt: text, shaped }), { minLength: 1, maxLength: 5 })
  .map((list) => {
    let offset = 0;
    return list.map(({ gap, type, createdAt, shaped: s }): CopyBatchEvent => ({ offset: (offset += gap), type, createdAt, shaped: s, fieldsJson: fieldsOf(s) }));
  });

describe('copies spliced from the stored fields', () => {
  it('store exactly the text JSON.stringify writes of the copy event', () => {
    fc.assert(
      fc.property(stamp, events, (s, evs) => {
        const batch: CopyBatch = { ...s, receivingStreamPath: '/r', events: evs };
        const plan = planCopies(batch, { projectId: 'proj', path: '/r' });
        expect(plan.inputs.every((input) => input.jsonAfterType !== undefined)).toBe(true);
        const decision = new Stream('proj', '/r').decide(plan.inputs, 'platform');
        expect(decision.fresh).toHaveLength(evs.length + 1);
        for (const f of decision.fresh) {
          expect(f.json).toBe(JSON.stringify(f.event));
          expect(f.bytes).toBe(Buffer.byteLength(f.json));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a copy stored as parts is measured from its parts: the UTF-8 bytes of its whole text', () => {
    // Types and 24-character times that JSON leaves as they stand (non-ASCII included: several
    // bytes a character), so that every copy is stored as parts and measured without its text.
    const plainChar = fc.oneof(
      fc.integer({ min: 0x20, max: 0x7e }).filter((c) => c !== 0x22 && c !== 0x5c),
      fc.integer({ min: 0x80, max: 0xd7ff }),
      fc.integer({ min: 0xe000, max: 0xffff }),
    ).map((c) => String.fromCharCode(c));
    const plain = (length: { minLength: number; maxLength: number }) => fc.array(plainChar, length).map((cs) => cs.join(''));
    const partsEvents = fc
      .array(fc.record({ gap: fc.integer({ min: 1, max: 2 ** 40 }), type: plain({ minLength: 1, maxLength: 10 }), createdAt: plain({ minLength: 24, maxLength: 24 }), payload: object }), {
        minLength: 1,
        maxLength: 5,
      })
      .map((list) => {
        let offset = 0;
        return list.map(({ gap, type, createdAt, payload }): CopyBatchEvent => {
          const s: ShapedEvent = { type, payload };
          return { offset: (offset += gap), type, createdAt, shaped: s, fieldsJson: fieldsOf(s) };
        });
      });
    fc.assert(
      fc.property(stamp, text, partsEvents, (s, path, evs) => {
        const receiver = `/${path}`;
        const batch: CopyBatch = { ...s, receivingStreamPath: receiver, events: evs };
        const plan = planCopies(batch, { projectId: 'proj', path: receiver });
        const decision = new Stream('proj', receiver).decide(plan.inputs, 'platform');
        const copies = decision.fresh.slice(1);
        expect(copies.every((f) => f.parts !== undefined)).toBe(true);
        for (const f of decision.fresh) {
          expect(f.json).toBe(JSON.stringify(f.event));
          expect(f.bytes).toBe(Buffer.byteLength(f.json));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a copy stored as parts is held to the event size limit like any event', () => {
    const s: ShapedEvent = { type: 't', payload: { text: 'é'.repeat(300) } };
    const batch: CopyBatch = {
      projectId: 'proj', path: '/a', streamId: 's', streamCreatedAt: 'c', subscriptionKey: 'k', cursorChangedAtSourceOffset: 1, receivingStreamPath: '/r',
      events: [{ offset: 7, type: 't', createdAt: '2025-01-01T00:00:00.000Z', shaped: s, fieldsJson: fieldsOf(s) }],
    };
    const plan = planCopies(batch, { projectId: 'proj', path: '/r' });
    const fits = new Stream('proj', '/r').decide(plan.inputs, 'platform');
    const bytes = fits.fresh[1]!.bytes;
    expect(fits.fresh[1]!.parts).toBeDefined();
    expect(bytes).toBe(Buffer.byteLength(fits.fresh[1]!.json));
    const limits = (maxEventBytes: number) => new Stream('proj', '/r', { maxEventBytes, maxCoreStateBytes: 1_048_576 });
    expect(limits(bytes).decide(plan.inputs, 'platform').fresh[1]!.bytes).toBe(bytes);
    expect(() => limits(bytes - 1).decide(plan.inputs, 'platform')).toThrow(`an event is ${bytes} bytes as JSON; the limit is ${bytes - 1} bytes`);
  });

  it('are planned only for first-hop copies given their fields', () => {
    const base = { projectId: 'proj', path: '/a', streamId: 's', streamCreatedAt: 'c', subscriptionKey: 'k', cursorChangedAtSourceOffset: 2, receivingStreamPath: '/r' };
    const s: ShapedEvent = { type: 't', payload: { n: 1 } };
    const hop = { projectId: 'proj', path: '/z', streamId: 'z', streamCreatedAt: 'c', offset: 1, type: 't', createdAt: 'c', subscriptionKey: 'x', cursorChangedAtSourceOffset: 1 };
    const plan = planCopies(
      {
        ...base,
        events: [
          { offset: 1, type: 't', createdAt: 'c', shaped: s, fieldsJson: fieldsOf(s) },
          { offset: 2, type: 't', createdAt: 'c', shaped: s },
          { offset: 3, type: 't', createdAt: 'c', shaped: s, fieldsJson: fieldsOf(s), source: { copiedFrom: [hop] } },
        ],
      },
      { projectId: 'proj', path: '/r' },
    );
    expect(plan.inputs.map((input) => input.jsonAfterType !== undefined)).toEqual([true, false, false]);
  });

  it('the decision stores the text given, not a serialisation of its own', () => {
    // A spelling JSON.stringify never writes (a space), to tell the splice from a serialisation.
    const decision = new Stream('proj', '/r').decide([{ type: 't', payload: { n: 1 }, jsonAfterType: ',"payload":{"n": 1}}' }], 'platform');
    expect(decision.fresh[1]!.json).toBe('{"path":"/r","offset":2,"createdAt":"2025-01-01T00:00:00.000Z","type":"t","payload":{"n": 1}}');
  });
});
