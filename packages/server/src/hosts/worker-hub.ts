/**
 * The RPC hub of one project in the Worker host: the Durable Object that holds the project's RPC
 * sessions (`/v1/rpc`), the workers they register, and the ITX root that itx-call deliveries are
 * evaluated against. Registrations are capnweb stubs that live in the isolate holding the
 * session's WebSocket, so the sessions of a project and the deliveries that reach its workers must
 * meet in one object: stream objects send their itx-call batches here over Durable Object RPC, and
 * the hub runs the engine's own itx receiver on them (the same evaluation, authority and outcome
 * classification as the Node host). Stream methods reached over RPC go through the Worker host's
 * stream service, i.e. to the streams' own objects.
 *
 * Limits (docs/cloudflare.md §4.6): one hub per project serialises every RPC message and itx-call of that
 * project; accepted WebSockets keep the hub in memory (no hibernation: capnweb sessions are
 * in-memory state).
 */
import type { DeliveryContext } from '../engine/delivery/receiver.js';
import { CallableRegistry } from '../engine/itx/worker-registry.js';
import type { Principal } from '../http/auth.js';
import type { ErrorLogger } from '../http/errors.js';
import { itxReceiver } from '../rpc/itx-receiver.js';
import { ItxRoot, type ItxDeps } from '../rpc/root.js';
import { startRpcSession, type RpcSocket } from '../rpc/session.js';
import type { ItxDelivery, ItxOutcome } from './worker-api.js';
import type { WorkerEnv } from './worker-env.js';
import { durableStreamService } from './worker-service.js';

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
  private sessions = 0;

  constructor(
    env: WorkerEnv,
    private readonly logger: ErrorLogger,
  ) {
    this.deps = { service: durableStreamService(env), workers: new CallableRegistry('worker') };
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
    this.sessions++;
    startRpcSession(server, principal, this.deps, this.logger, { onClose: () => this.sessions-- });
    return new Response(null, { status: 101, webSocket: client } as ResponseInit);
  }

  get openSessions(): number {
    return this.sessions;
  }

  /** One itx-call delivery of a stream object: the engine's itx receiver against this project's root. */
  async deliverItx(delivery: ItxDelivery): Promise<ItxOutcome> {
    const receiver = itxReceiver((projectId) => new ItxRoot({ projectId, sessionId: null, deps: this.deps }));
    const ctx = {
      projectId: delivery.projectId,
      path: delivery.path,
      streamId: delivery.streamId,
      streamCreatedAt: delivery.streamCreatedAt,
      subscriptionKey: delivery.subscriptionKey,
      cursorChangedAtSourceOffset: delivery.cursorChangedAtSourceOffset,
      deliveryId: delivery.deliveryId,
      attempt: delivery.attempt,
      streamMaxOffset: delivery.streamMaxOffset,
      entry: { configuration: { receiver: { action: 'itx-call', expression: delivery.expression } } },
      sourceEvent: () => undefined,
      signal: new AbortController().signal,
    } as unknown as DeliveryContext;
    return receiver.deliver(ctx, delivery.events as Parameters<typeof receiver.deliver>[1]);
  }
}
