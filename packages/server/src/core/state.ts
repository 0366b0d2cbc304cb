/** The shape of a fresh stream's core state (protocol §10). */
import type { CoreState } from '@rivulet/contract';

export function initialState(args: {
  projectId: string | null;
  path: string;
  streamId: string;
  createdAt: string;
}): CoreState {
  return {
    projectId: args.projectId,
    path: args.path,
    streamId: args.streamId,
    createdAt: args.createdAt,
    eventCount: 0,
    maxOffset: 0,
    paused: false,
    pauseReason: null,
    subscriptions: { inbound: { bySourcePath: {} }, outbound: { byKey: {} } },
  };
}
