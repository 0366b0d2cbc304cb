/**
 * `POST /v1/streams/{path}:waitForEvent` (protocol §19.7): the first matching event
 * after `afterOffset` (or the first live one), `408 TIMEOUT` when nothing matched in time. The wait
 * ends early, recording `cancelled`, when the client goes away.
 */
import { RivuletError, WaitForEventBodySchema, parseOrThrow } from '@rivulet/contract';
import type { OpenApiOperation } from './openapi.js';
import { json, refuseQuery, type CustomMethod } from './stream-routes.js';

export const connectionMethods = new Map<string, CustomMethod>([
  [
    'waitForEvent',
    {
      httpMethod: 'POST',
      async handle(req) {
        refuseQuery(req.url, ':waitForEvent');
        const body = parseOrThrow(WaitForEventBodySchema, await req.json(), 'body');
        if (!req.service.waitForEvent) throw new RivuletError('UNAVAILABLE', 'this server does not serve waitForEvent');
        return json(await req.service.waitForEvent(req.principal.projectId, req.path, body, req.request.signal));
      },
    },
  ],
]);

export const connectionOperations: OpenApiOperation[] = [
  {
    path: '/v1/streams/{path}:waitForEvent',
    method: 'post',
    summary:
      'Wait for the first matching event: a durable one after afterOffset when given, else the first appended from now on; ' +
      'records connection-opened/connection-closed; 408 TIMEOUT after timeoutMs',
    body: WaitForEventBodySchema,
    response: {
      type: 'object',
      properties: { event: { $ref: '#/components/schemas/CommittedEvent' } },
      required: ['event'],
    },
    errors: ['INVALID_INPUT', 'TIMEOUT', 'CONFLICT', 'UNAVAILABLE'],
  },
];
