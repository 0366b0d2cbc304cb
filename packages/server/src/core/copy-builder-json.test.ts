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
        for (const f of decision.fresh) expect(f.json).toBe(JSON.stringify(f.event));
      }),
      { numRuns: 300 },
    );
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
