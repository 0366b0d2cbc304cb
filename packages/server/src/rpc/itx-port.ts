/**
 * The ITX port (ports/itx.ts) over an in-process ITX root: what the Node host composes, and what
 * the Worker host's RPC hub runs for the stream objects of its project (hosts/worker/hub.ts).
 * Every call evaluates the expression from the root of the project named (rpc/itx-call.ts, which
 * also classifies failures, protocol §18.5); wakes keep the host's processEventBatch stub
 * (rpc/processor-waker.ts).
 */
import type { ItxPort } from '../ports/itx.js';
import { callClassified } from './itx-call.js';
import { rootWake } from './processor-waker.js';
import type { ItxRoot } from './root.js';

export function rootItx(rootFor: (projectId: string | null) => ItxRoot): ItxPort {
  return {
    async call(projectId, expression, batch) {
      const called = await callClassified(rootFor(projectId), expression, batch);
      return called.ok ? { ok: true } : called;
    },
    wake: rootWake(rootFor),
  };
}
