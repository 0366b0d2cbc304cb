/**
 * The routes that find, inspect and try subscriptions (protocol §21–§23): `GET /v1/subscriptions`,
 * `GET /v1/streams/{path}:deliveryAttempts` and `POST /v1/streams/{path}:previewSubscription`.
 * Queries and bodies are parsed with the contract's schemas; the service answers.
 */
import {
  DeliveryAttemptsQuerySchema,
  ListSubscriptionsQuerySchema,
  PreviewSubscriptionBodySchema,
  RivuletError,
  SUBSCRIPTION_STATUSES,
  SubscriptionAdminLimits,
  canonicalizePath,
  parseOrThrow,
} from '@rivulet/contract';
import type { StreamService } from '../engine/service.js';
import type { Principal } from './auth.js';
import type { OpenApiOperation } from './openapi.js';
import { json, queryObject, refuseQuery, type CustomMethod } from './stream-routes.js';

function unavailable(what: string): never {
  throw new RivuletError('UNAVAILABLE', `this server does not answer ${what}`);
}

export async function handleSubscriptionList(request: Request, principal: Principal, service: StreamService): Promise<Response> {
  const q = parseOrThrow(ListSubscriptionsQuerySchema, queryObject(new URL(request.url)), 'query');
  if (!service.listSubscriptions) unavailable('GET /v1/subscriptions');
  const prefix = q.prefix === undefined ? '/' : canonicalizePath(q.prefix);
  return json(
    await service.listSubscriptions(principal.projectId, {
      prefix,
      statuses: q.status,
      after: q.after,
      limit: q.limit ?? SubscriptionAdminLimits.listPageDefault,
    }),
  );
}

export const subscriptionAdminMethods = new Map<string, CustomMethod>([
  [
    'deliveryAttempts',
    {
      httpMethod: 'GET',
      async handle(req) {
        const q = parseOrThrow(DeliveryAttemptsQuerySchema, queryObject(req.url), 'query');
        if (!req.service.deliveryAttempts) unavailable(':deliveryAttempts');
        return json(await req.service.deliveryAttempts(req.principal.projectId, req.path, q));
      },
    },
  ],
  [
    'previewSubscription',
    {
      httpMethod: 'POST',
      async handle(req) {
        refuseQuery(req.url, ':previewSubscription');
        const body = parseOrThrow(PreviewSubscriptionBodySchema, await req.json());
        if (!req.service.previewSubscription) unavailable(':previewSubscription');
        return json(await req.service.previewSubscription(req.principal.projectId, req.path, body));
      },
    },
  ],
]);

const halt = {
  type: 'object',
  properties: { reason: { const: 'delivery-failed' }, afterOffset: { type: 'integer' }, attempts: { type: 'integer' }, error: { type: 'string' } },
  required: ['reason', 'afterOffset', 'attempts'],
};
const listEntry = {
  type: 'object',
  properties: {
    sourcePath: { type: 'string' },
    subscriptionKey: { type: 'string' },
    action: { enum: ['processor-wake', 'copy-to-stream', 'itx-call', 'webhook-post'] },
    target: { type: 'string' },
    status: { enum: SUBSCRIPTION_STATUSES },
    acknowledgedOffset: { type: 'integer' },
    lag: { type: 'integer' },
    attempt: { type: 'integer' },
    lastError: { type: ['string', 'null'] },
    deliveryHalted: halt,
    configuredAt: { type: 'string' },
  },
  required: ['sourcePath', 'subscriptionKey', 'action', 'target', 'status', 'acknowledgedOffset', 'lag', 'attempt', 'lastError', 'configuredAt'],
};
const attempt = {
  type: 'object',
  properties: {
    at: { type: 'string' },
    run: { type: 'string' },
    attempt: { type: 'integer' },
    fromOffset: { type: 'integer' },
    toOffset: { type: 'integer' },
    outcome: { enum: ['ok', 'failed', 'unavailable', 'skipped', 'dropped'] },
    status: { type: 'integer' },
    responseExcerpt: { type: 'string' },
    error: { type: 'string' },
    durationMs: { type: 'number' },
  },
  required: ['at', 'run', 'attempt', 'fromOffset', 'toOffset', 'outcome', 'durationMs'],
};

export const subscriptionAdminOperations: OpenApiOperation[] = [
  {
    path: '/v1/subscriptions',
    method: 'get',
    summary: "List the caller project's subscriptions across its streams, halted first, filtered by status and path prefix",
    query: ListSubscriptionsQuerySchema,
    response: { type: 'object', properties: { subscriptions: { type: 'array', items: listEntry }, next: { type: 'string' } }, required: ['subscriptions'] },
    errors: ['INVALID_INPUT'],
  },
  {
    path: '/v1/streams/{path}:deliveryAttempts',
    method: 'get',
    summary: 'The newest delivery attempts of one subscription of this (source) stream, newest first',
    query: DeliveryAttemptsQuerySchema,
    response: { type: 'object', properties: { attempts: { type: 'array', items: attempt } }, required: ['attempts'] },
    errors: ['INVALID_INPUT', 'NOT_FOUND'],
  },
  {
    path: '/v1/streams/{path}:previewSubscription',
    method: 'post',
    summary: 'Dry run: what a subscription-configured payload would deliver from this stream\'s recent history (appends nothing)',
    body: PreviewSubscriptionBodySchema,
    response: {
      type: 'object',
      properties: {
        scanned: { type: 'integer' },
        matched: { type: 'integer' },
        deliveries: { type: 'array', items: { type: 'object', properties: { offset: { type: 'integer' }, event: { type: 'object' } }, required: ['offset', 'event'] } },
        errors: { type: 'array', items: { type: 'object', properties: { offset: { type: 'integer' }, error: { type: 'string' } }, required: ['offset', 'error'] } },
      },
      required: ['scanned', 'matched', 'deliveries', 'errors'],
    },
    errors: ['INVALID_INPUT'],
  },
];
