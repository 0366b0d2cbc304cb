/**
 * A stream object's metrics reporter wired to its object (metrics-reporter.ts has the reporter,
 * metrics-rollup.ts the whole design; docs/cloudflare.md §4.2): what the reporter reads of the
 * stream — its lifetime, head, lags, connections and log — and the project's index it reports to.
 */
import type { StreamActor } from '../../engine/actor.js';
import { engineLog } from '../../engine/compose.js';
import type { ServerMetrics } from '../../engine/metrics.js';
import type { ErrorLogger } from '../../http/errors.js';
import { systemTimer } from '../../ports/timer.js';
import { projectObjectName, type WorkerEnv } from './env.js';
import { COUNTED_TYPES, MetricsReporter, scanFacts } from './metrics-reporter.js';
import { unwrap } from './wire.js';

/** What the reporter reads of its stream object. */
export interface ReportedObject {
  env: WorkerEnv;
  logger: ErrorLogger;
  /** The project of the stream the object is bound to (null before it is bound, or the default project). */
  projectId(): string | null;
  /** The stream's actor once the object is bound. */
  actor(): StreamActor | undefined;
  /** Open live connections and waits of the object. */
  connections(): number;
}

export function streamMetricsReporter(host: ReportedObject, metrics: ServerMetrics): MetricsReporter {
  const index = () => host.env.STREAM_INDEX.getByName(projectObjectName(host.projectId()));
  const log = engineLog(host.logger);
  return new MetricsReporter({
    timer: systemTimer,
    metrics,
    subject: () => {
      const actor = host.actor();
      const state = actor?.exists ? actor.coreState : null;
      if (!actor || !state) return null;
      const runtime = actor.runtimeState();
      const lags = Object.entries(runtime?.subscriptions ?? {}).map(([key, r]) => ({ key, lag: r.lag }));
      return { streamId: state.streamId, path: actor.path, head: actor.durableHead, lags, connections: host.connections() };
    },
    scan: (afterOffset) => {
      const actor = host.actor();
      if (!actor) return [];
      const read = (after: number, limit: number) =>
        actor.readRaw({ afterOffset: after, limit, includeEphemeral: false, eventTypes: COUNTED_TYPES }).events;
      return scanFacts(read, afterOffset, (key) => actionOf(actor, key));
    },
    // Asked only for the subject's stream, so the actor is bound: its store's event rows.
    scanBytes: (streamId, afterOffset, throughOffset) => host.actor()?.store.events.storedBytes(streamId, afterOffset, throughOffset) ?? 0,
    mark: (streamId) => unwrap('the stream index', () => index().metricsMark(host.projectId(), streamId)),
    send: (report) => unwrap('the stream index', () => index().reportMetrics(host.projectId(), report)),
    log,
  });
}

/** The action of subscription `key` of the stream's current state. */
export function actionOf(actor: StreamActor, key: string): string | undefined {
  const state = actor.exists ? actor.coreState : null;
  return state?.subscriptions.outbound.byKey[key]?.configuration.receiver.action;
}
