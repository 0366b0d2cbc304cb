import type { CommittedEvent } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { committedJson, rememberJson } from './event-json.js';

const event = (): CommittedEvent => ({ path: '/s', offset: 2, createdAt: '2025-01-01T00:00:00.000Z', type: 'app/x', payload: { n: 1 } });

describe('committedJson', () => {
  it('answers the remembered text, and serialises an event it was never given', () => {
    const e = event();
    expect(committedJson(e)).toBe(JSON.stringify(e));
    rememberJson(e, '{"stored":true}');
    expect(committedJson(e)).toBe('{"stored":true}');
    rememberJson(e, '{"again":true}');
    expect(committedJson(e)).toBe('{"again":true}');
  });

  it('leaves what anything else sees of the event unchanged', () => {
    const e = event();
    const json = JSON.stringify(e);
    rememberJson(e, json);
    expect(JSON.stringify(e)).toBe(json);
    expect(Object.keys(e)).toEqual(['path', 'offset', 'createdAt', 'type', 'payload']);
    expect(e).toStrictEqual(event());
    expect(event()).toStrictEqual(e);
    expect(structuredClone(e)).toStrictEqual(event());
  });

  it('a copy of an event, changed or not, is serialised on demand', () => {
    const e = event();
    rememberJson(e, JSON.stringify(e));
    const changed = { ...e, payload: { n: 2 } };
    expect(committedJson(changed)).toBe(JSON.stringify(changed));
    const assigned = Object.assign({}, e, { offset: 3 });
    expect(committedJson(assigned)).toBe(JSON.stringify(assigned));
  });
});
