/**
 * Folds for the core tests of reduce (src/core/reduce*.test.ts): a stream's created event, a fold
 * of events with consecutive offsets after it, and copied events with their hop (protocol §13.2).
 */
import { EventType, type CommittedEvent, type CopyHop, type CoreState } from '@rivulet/contract';
import { reduce } from '../../src/core/reduce.js';

export const T0 = '2025-01-01T00:00:00.000Z';
export const at = (ms: number): string => new Date(Date.parse(T0) + ms).toISOString();

export const createdEvent = (projectId: string | null = 'proj'): CommittedEvent => ({
  path: '/s',
  offset: 1,
  createdAt: T0,
  type: EventType.created,
  payload: { projectId, path: '/s', streamId: 'stream-1' },
});

/** Folds events with consecutive offsets after the created event. */
export function fold(...events: Array<Omit<CommittedEvent, 'offset' | 'path' | 'createdAt'> & { createdAt?: string }>): CoreState {
  let state = reduce(null, createdEvent());
  events.forEach((e, i) => {
    state = reduce(state, { path: '/s', offset: i + 2, createdAt: e.createdAt ?? at(i + 1), ...e });
  });
  return state;
}

export function hop(overrides: Partial<CopyHop> = {}): CopyHop {
  return {
    projectId: 'proj',
    path: '/src',
    streamId: 'src-1',
    streamCreatedAt: T0,
    offset: 5,
    type: 'app/thing',
    createdAt: T0,
    subscriptionKey: 'k',
    cursorChangedAtSourceOffset: 3,
    ...overrides,
  };
}

export const copied = (h: CopyHop, type = 'app/thing', createdAt?: string) => ({
  type,
  payload: { copied: true },
  source: { copiedFrom: [h] },
  ...(createdAt ? { createdAt } : {}),
});
