/**
 * Helpers for the end-to-end live-connection suites (test/e2e/live-connections*.test.ts): a
 * stream's connection facts and its runtime.connections (protocol §19.4, §19.6), read over HTTP.
 */
import type { CommittedEvent } from '@rivulet/client';
import type { TestServer } from './server.js';
import { EventType } from './subscriptions.js';

export const isFact = (e: CommittedEvent) => e.type === EventType.connectionOpened || e.type === EventType.connectionClosed;

/** Reads of the server `current()` answers: the test file's server, started in its beforeAll. */
export function connectionReads(current: () => TestServer) {
  async function facts(path: string): Promise<CommittedEvent[]> {
    return (await current().api.readAll(path)).filter(isFact);
  }

  async function connectionsOf(path: string) {
    return (await current().api.state(path)).runtime?.connections ?? {};
  }

  return { facts, connectionsOf };
}
