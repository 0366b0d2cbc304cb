/**
 * The subscription custom methods of protocol §14 over HTTP: parse the body with its schema, call
 * the service, answer its result. `{path}` is the receiving stream for subscribe/unsubscribe and
 * the source stream for the cursor and resume commands.
 */
import {
  ResumeSubscriptionBodySchema,
  SetSubscriptionCursorBodySchema,
  SubscribeToEventsFromBodySchema,
  UnsubscribeFromEventsBodySchema,
  parseOrThrow,
} from '@rivulet/contract';
import type { z } from 'zod';
import type { OpenApiOperation } from './openapi.js';
import { json, refuseQuery, type CustomMethod, type StreamRequest } from './stream-routes.js';

function post<S extends z.ZodType>(name: string, schema: S, run: (req: StreamRequest, body: z.output<S>) => Promise<unknown>): CustomMethod {
  return {
    httpMethod: 'POST',
    async handle(req) {
      refuseQuery(req.url, `:${name}`);
      const body = parseOrThrow(schema, await req.json());
      return json(await run(req, body));
    },
  };
}

export const subscriptionMethods = new Map<string, CustomMethod>([
  [
    'subscribeToEventsFrom',
    post('subscribeToEventsFrom', SubscribeToEventsFromBodySchema, (req, body) => req.service.subscribeToEventsFrom(req.principal.projectId, req.path, body)),
  ],
  [
    'unsubscribeFromEvents',
    post('unsubscribeFromEvents', UnsubscribeFromEventsBodySchema, (req, body) => req.service.unsubscribeFromEvents(req.principal.projectId, req.path, body)),
  ],
  [
    'setSubscriptionCursor',
    post('setSubscriptionCursor', SetSubscriptionCursorBodySchema, (req, body) => req.service.setSubscriptionCursor(req.principal.projectId, req.path, body)),
  ],
  [
    'resumeSubscription',
    post('resumeSubscription', ResumeSubscriptionBodySchema, (req, body) => req.service.resumeSubscription(req.principal.projectId, req.path, body)),
  ],
  [
    'setSubscriptionCursorAndResume',
    post('setSubscriptionCursorAndResume', SetSubscriptionCursorBodySchema, (req, body) =>
      req.service.setSubscriptionCursorAndResume(req.principal.projectId, req.path, body),
    ),
  ],
]);

const event = { $ref: '#/components/schemas/CommittedEvent' };
const nullableEvent = { oneOf: [event, { type: 'null' }] };
const obj = (properties: Record<string, unknown>) => ({ type: 'object', properties, required: Object.keys(properties) });

export const subscriptionOperations: OpenApiOperation[] = [
  {
    path: '/v1/streams/{path}:subscribeToEventsFrom',
    method: 'post',
    summary: 'Copy matching events of sourceStreamPath into this (receiving) stream: appends subscription-configured on the source',
    body: SubscribeToEventsFromBodySchema,
    response: obj({ subscriptionKey: { type: 'string' }, subscriptionConfiguredEvent: event }),
    errors: ['INVALID_INPUT', 'CONFLICT', 'LIMIT_EXCEEDED', 'PRECONDITION_FAILED'],
  },
  {
    path: '/v1/streams/{path}:unsubscribeFromEvents',
    method: 'post',
    summary: 'Remove a copy subscription of sourceStreamPath that targets this stream',
    body: UnsubscribeFromEventsBodySchema,
    response: { type: 'object', properties: { status: { enum: ['removed', 'already-absent'] }, subscriptionRemovedEvent: event }, required: ['status'] },
    errors: ['INVALID_INPUT'],
  },
  {
    path: '/v1/streams/{path}:setSubscriptionCursor',
    method: 'post',
    summary: 'Append subscription-cursor-set on this (source) stream: redeliver from afterOffset (exclusive) in a new run',
    body: SetSubscriptionCursorBodySchema,
    response: obj({ event }),
    errors: ['INVALID_INPUT', 'NOT_FOUND'],
  },
  {
    path: '/v1/streams/{path}:resumeSubscription',
    method: 'post',
    summary: 'Resume a halted subscription from its cursor with a fresh retry ladder (event null when it was not halted)',
    body: ResumeSubscriptionBodySchema,
    response: obj({ event: nullableEvent }),
    errors: ['INVALID_INPUT', 'NOT_FOUND'],
  },
  {
    path: '/v1/streams/{path}:setSubscriptionCursorAndResume',
    method: 'post',
    summary: 'Set the cursor and resume in one atomic append (resumed null when it was not halted)',
    body: SetSubscriptionCursorBodySchema,
    response: obj({ cursorSet: event, resumed: nullableEvent }),
    errors: ['INVALID_INPUT', 'NOT_FOUND'],
  },
];
