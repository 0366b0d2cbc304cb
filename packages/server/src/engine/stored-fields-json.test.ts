/**
 * The stored text of an event's payload and metadata (event-json.ts `storedFieldsJson`): it is what
 * serialising the parsed event's fields again writes, and it is refused whenever the text is not
 * laid out as the append path stores it.
 */
import type { CommittedEvent } from '@rivulet/contract';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildEvent } from '../core/decide-append.js';
import { unshaped } from '../core/filter.js';
import { committedJson, rememberJson, storedFieldsJson } from './event-json.js';
import { appendInput } from '../../test/helpers/json-arbitrary.js';

/** An event as a delivery has it: parsed from its stored text, the text riding along. */
function stored(text: string): CommittedEvent {
  const event = JSON.parse(text) as CommittedEvent;
  rememberJson(event, text);
  return event;
}

const input = appendInput;

describe('storedFieldsJson', () => {
  it('cuts exactly what serialising the parsed fields again writes, unicode and numbers included', () => {
    fc.assert(
      fc.property(input, fc.string({ unit: 'binary', maxLength: 10 }), fc.integer({ min: 1, max: 2 ** 40 }), (i, path, offset) => {
        const event = stored(JSON.stringify(buildEvent(`/${path}`, offset, '2026-12-02T00:00:00.000Z', i)));
        const fields = storedFieldsJson(event);
        expect(fields).toBeDefined();
        expect(`{"type":${JSON.stringify(event.type)}${fields}}`).toBe(JSON.stringify(unshaped(event)));
      }),
      { numRuns: 400 },
    );
  });

  it("answers '' for an event with neither payload nor metadata", () => {
    expect(storedFieldsJson(stored('{"path":"/a","offset":3,"createdAt":"2026-12-02T00:00:00.000Z","type":"t","idempotencyKey":"k"}'))).toBe('');
  });

  it('refuses events without their text, ephemeral ones and copies', () => {
    const plain = JSON.parse('{"path":"/a","offset":3,"createdAt":"2026-12-02T00:00:00.000Z","type":"t","payload":{"n":1}}') as CommittedEvent;
    expect(storedFieldsJson(plain)).toBeUndefined();
    expect(storedFieldsJson(stored('{"path":"/a","offset":3,"createdAt":"2026-12-02T00:00:00.000Z","type":"t","payload":{"n":1},"ephemeral":true}'))).toBeUndefined();
    const hop = { projectId: null, path: '/s', streamId: 'x', streamCreatedAt: 'c', offset: 1, type: 't', createdAt: 'c', subscriptionKey: 'k', cursorChangedAtSourceOffset: 1 };
    const copy = buildEvent('/a', 3, '2026-12-02T00:00:00.000Z', { type: 't', payload: { n: 1 }, source: { copiedFrom: [hop] } });
    expect(storedFieldsJson(stored(JSON.stringify(copy)))).toBeUndefined();
  });

  it('refuses a text laid out otherwise: other member order, spacing, members it does not know', () => {
    const texts = [
      '{"path":"/a","offset":3,"createdAt":"2026-12-02T00:00:00.000Z","type":"t","metadata":{"m":1},"payload":{"n":1}}',
      '{"offset":3,"path":"/a","createdAt":"2026-12-02T00:00:00.000Z","type":"t","payload":{"n":1}}',
      '{"path":"/a","offset":3,"createdAt":"2026-12-02T00:00:00.000Z","type":"t", "payload":{"n":1}}',
      '{"path":"/a","offset":3,"createdAt":"2026-12-02T00:00:00.000Z","type":"t","extra":1}',
      '{"path":"/a","offset":3,"createdAt":"2026-12-02T00:00:00.000Z","type":"t","payload":{"n":1},"extra":1}',
      '{"path":"/a","offset":3,"createdAt":"2026-12-02T00:00:00.000Z","type":"t","payload":{"n":1},"idempotencyKey":"k" }',
    ];
    for (const t of texts) {
      const event = stored(t);
      expect(committedJson(event)).toBe(t);
      expect(storedFieldsJson(event), t).toBeUndefined();
    }
  });
});
