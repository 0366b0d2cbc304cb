/**
 * /v1/openapi.json, generated from the same zod schemas that validate requests (so the document
 * cannot drift from what the server accepts). Responses are described by their pinned shapes.
 */
import {
  AppendBodySchema,
  CommittedEventSchema,
  ERROR_CODES,
  ERROR_STATUS,
  ListQuerySchema,
  ReadQuerySchema,
} from '@rivulet/contract';
import { z } from 'zod';

type Json = Record<string, unknown>;

export interface OpenApiOperation {
  path: string;
  method: 'get' | 'post' | 'delete';
  summary: string;
  body?: z.ZodType;
  query?: z.ZodObject;
  response: Json;
  errors: readonly (keyof typeof ERROR_STATUS)[];
}

const schema = (s: z.ZodType, io: 'input' | 'output' = 'input'): Json => {
  const out = z.toJSONSchema(s, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  delete out.$schema;
  return out;
};

const eventRef = { $ref: '#/components/schemas/CommittedEvent' };
const jsonObject = (properties: Json, required: string[] = Object.keys(properties)): Json => ({
  type: 'object',
  properties,
  required,
});

export const coreOperations: OpenApiOperation[] = [
  {
    path: '/v1/streams/{path}',
    method: 'post',
    summary: 'Append one event, or an array of events atomically',
    body: AppendBodySchema,
    response: jsonObject({ events: { type: 'array', items: eventRef } }),
    errors: ['INVALID_INPUT', 'FORBIDDEN', 'CONFLICT', 'PRECONDITION_FAILED', 'PAYLOAD_TOO_LARGE', 'LIMIT_EXCEEDED'],
  },
  {
    path: '/v1/streams/{path}',
    method: 'get',
    summary: 'Read a page of committed events; with live=sse, a text/event-stream tail (replay, then live)',
    query: ReadQuerySchema,
    response: jsonObject({
      streamId: { type: ['string', 'null'] },
      streamMaxOffset: { type: 'integer' },
      events: { type: 'array', items: eventRef },
    }),
    errors: ['INVALID_INPUT'],
  },
  {
    path: '/v1/streams/{path}',
    method: 'delete',
    summary: 'Destroy a stream: erase every row; the next touch starts a new lifetime',
    response: jsonObject({ destroyed: { const: true } }),
    errors: ['INVALID_INPUT'],
  },
  {
    path: '/v1/streams/{path}:state',
    method: 'get',
    summary: 'Reduced core state and runtime state',
    response: jsonObject({ core: { type: ['object', 'null'] }, runtime: { type: ['object', 'null'] } }),
    errors: ['INVALID_INPUT'],
  },
  {
    path: '/v1/streams',
    method: 'get',
    summary: 'List streams of the caller project below a path prefix',
    query: ListQuerySchema,
    response: jsonObject(
      {
        streams: {
          type: 'array',
          items: jsonObject({
            path: { type: 'string' },
            streamId: { type: 'string' },
            createdAt: { type: 'string' },
            maxOffset: { type: 'integer' },
          }),
        },
        nextAfter: { type: 'string' },
      },
      ['streams'],
    ),
    errors: ['INVALID_INPUT'],
  },
];

export function buildOpenApi(operations: readonly OpenApiOperation[], version: string): Json {
  const paths: Record<string, Json> = {};
  for (const op of operations) {
    const parameters: Json[] = [];
    if (op.path.includes('{path}')) {
      parameters.push({
        name: 'path',
        in: 'path',
        required: true,
        description: 'The stream path without its leading "/" (empty for the root stream)',
        schema: { type: 'string' },
      });
    }
    if (op.query) {
      const q = schema(op.query) as { properties?: Record<string, Json>; required?: string[] };
      for (const [name, s] of Object.entries(q.properties ?? {})) {
        parameters.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema: s });
      }
    }
    const responses: Json = {
      '200': { description: 'OK', content: { 'application/json': { schema: op.response } } },
    };
    for (const code of op.errors) {
      responses[String(ERROR_STATUS[code])] = {
        description: code,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    const operation: Json = { summary: op.summary, parameters, responses };
    if (op.body) operation.requestBody = { required: true, content: { 'application/json': { schema: schema(op.body) } } };
    paths[op.path] = { ...(paths[op.path] ?? {}), [op.method]: operation };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Rivulet', version, description: 'Durable event streams with durable subscriptions' },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        CommittedEvent: schema(CommittedEventSchema, 'output'),
        Error: jsonObject({
          error: jsonObject(
            { code: { enum: ERROR_CODES }, message: { type: 'string' }, details: {} },
            ['code', 'message'],
          ),
        }),
      },
    },
    security: [{ bearer: [] }, {}],
    paths,
  };
}
