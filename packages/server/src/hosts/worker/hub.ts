/**
 * The RPC hub of one project in the Worker host: the Durable Object that holds the project's RPC
 * sessions (`/v1/rpc`), the workers and processor hosts they register, and the ITX root that
 * itx-call and processor-wake deliveries are evaluated against. Registrations are capnweb stubs
 * that live in the isolate holding the session's WebSocket, so the sessions of a project and the
 * deliveries that reach its workers must meet in one object: stream objects send their itx-call
 * batches and processor wakes here over Durable Object RPC, and the hub runs the ITX port over
 * its root on them (rpc/itx-port.ts: the same evaluation, authority and outcome classification as
 * the Node host; processors.ts). Stream methods reached over RPC go through the Worker
 * host's stream service, i.e. to the streams' own objects — live connections and waits too, whose
 * engine runs in the stream's object while their callbacks stay here (worker-connections.ts).
 *
 * When a processor host registers, the streams whose wakes passed through this hub since the last
 * registration are told, so that rows backing off for want of a host are tried at once (protocol
 * §20.6). That memory is the hub's own: after the hub restarts, those rows wait out their backoff.
 *
 * The hub tells its project's index its count of open sessions for rivulet_rpc_sessions, every
 * second while any is open (sessions-reporter.ts, docs/cloudflare.md §4.2).
 *
 * Limits (docs/cloudflare.md §4.6): one hub per project serialises every RPC message and itx-call of that
 * project; accepted WebSockets keep the hub in memory (no hibernation: capnweb sessions are
 * in-memory state).
 */
import type { ItxBatch, ItxExpression, ProcessorWakeRequest } from '@rivulet/contract';
import { CallableRegistry } from '../../engine/itx/worker-registry.js';
import type { Principal } from '../../http/auth.js';
import type { ErrorLogger } from '../../http/errors.js';
import type { ItxCallOutcome, ItxPort } from '../../ports/itx.js';
import { rootItx } from '../../rpc/itx-port.js';
import { ItxRoot, type ItxDeps } from '../../rpc/root.js';
import { SessionClosers } from '../../rpc/session-closers.js';
import { startRpcSession, type RpcSocket } from '../../rpc/session.js';
import type { HubWakeOutcome, RemoteFunction } from './api.js';
import { engineLog } from '../../engine/compose.js';
import { systemTimer } from '../../ports/timer.js';
import { projectObjectName, streamObjectName, type WorkerEnv } from './env.js';
import { HostedCallableTarget, plainValue } from './processors.js';
import { durableStreamService } from './service.js';
import { SessionsReporter } from './sessions-reporter.js';
import { unwrap } from './wire.js';

/** Streams remembered for a processor host's registration (the oldest are forgotten beyond it). */
const MAX_WAITING_STREAMS = 10_000;

/** The header the Worker entry passes the authenticated principal in (never taken from a client). */
export const PRINCIPAL_HEADER = 'x-rivulet-principal';

interface WorkersWebSocket extends RpcSocket {
  accept(): void;
}

interface WebSocketPairConstructor {
  new (): { 0: WorkersWebSocket; 1: WorkersWebSocket };
}

export class RpcHub {
  private readonly deps: ItxDeps;
  private readonly itx: ItxPort;
  private sessions = 0;
  /** The project of this hub (learnt from its first session: every session of a hub is of its project). */
  private project: string | null = null;
  /** Tells the project's index the open sessions, for rivulet_rpc_sessions (sessions-reporter.ts). */
  private readonly sessionsReporter: SessionsReporter;
  /** Paths of streams that woke a processor through this hub since the last registration. */
  private readonly waking = new Set<string>();

  constructor(
    private readonly env: WorkerEnv,
    private readonly logger: ErrorLogger,
  ) {
    const processors = new CallableRegistry('processor');
    this.deps = {
      service: durableStreamService(env),
      workers: new CallableRegistry('worker'),
      processors,
      sessions: new SessionClosers(),
    };
    this.itx = rootItx((projectId) => new ItxRoot({ projectId, sessionId: null, deps: this.deps }));
    processors.onRegistered((projectId) => this.processorHostRegistered(projectId));
    this.sessionsReporter = new SessionsReporter({
      timer: systemTimer,
      sessions: () => this.sessions,
      send: (reporter, count) =>
        unwrap('the stream index', () => this.env.STREAM_INDEX.getByName(projectObjectName(this.project)).reportSessions(this.project, reporter, count)),
      log: engineLog(logger),
    });
  }

  /** Accepts an RPC session over a WebSocket upgrade the Worker entry has authenticated. */
  accept(request: Request): Response {
    const principal = JSON.parse(request.headers.get(PRINCIPAL_HEADER) ?? 'null') as Principal | null;
    if (!principal) return new Response('missing principal', { status: 500 });
    const Pair = (globalThis as unknown as { WebSocketPair: WebSocketPairConstructor }).WebSocketPair;
    const pair = new Pair();
    const client = pair[0];
    const server = pair[1];
    server.accept();
    this.project = principal.projectId;
    this.sessions++;
    this.sessionsReporter.poke();
    startRpcSession(server, principal, this.deps, this.logger, {
      onClose: () => {
        this.sessions--;
        this.sessionsReporter.poke();
      },
    });
    return new Response(null, { status: 101, webSocket: client } as ResponseInit);
  }

  get openSessions(): number {
    return this.sessions;
  }

  /** One itx-call delivery of a stream object: the ITX port against this project's root. */
  callItx(projectId: string | null, expression: ItxExpression, batch: ItxBatch): Promise<ItxCallOutcome> {
    return this.itx.call(projectId, expression, batch);
  }

  /** One processor wake of a stream object (protocol §20.3): the ITX port's wake against this project's root. */
  async wakeProcessor(
    projectId: string | null,
    path: string,
    expression: ItxExpression,
    request: ProcessorWakeRequest,
    untilReleased: RemoteFunction<void, void>,
  ): Promise<HubWakeOutcome> {
    this.waking.delete(path);
    this.waking.add(path);
    if (this.waking.size > MAX_WAITING_STREAMS) this.waking.delete(this.waking.values().next().value!);
    const outcome = await this.itx.wake(projectId, expression, request);
    if (!outcome.ok) return { ok: false, kind: outcome.kind, error: outcome.error };
    const answer = outcome.answer && {
      streamId: plainValue(outcome.answer.streamId),
      checkpointOffset: plainValue(outcome.answer.checkpointOffset),
    };
    return { ok: true, answer, callable: outcome.callable && new HostedCallableTarget(outcome.callable, untilReleased) };
  }

  /** A processor host registered: the streams that woke processors here try their waiting rows now. */
  private processorHostRegistered(projectId: string | null): void {
    const paths = [...this.waking];
    this.waking.clear();
    for (const path of paths) {
      unwrap(`stream ${path}`, () => this.env.STREAMS.getByName(streamObjectName(projectId, path)).processorHostRegistered(projectId, path)).catch(
        (error: unknown) => this.logger.warn?.(`rivulet: could not tell ${path} that a processor host registered: ${String(error)}`),
      );
    }
  }
}
