/**
 * /v1/openapi.json (protocol §15.3), generated from the same zod schemas that validate requests
 * (so the document cannot drift from what the server accepts). Responses are described by their
 * pinned shapes. Written for standard generators: named schemas live under components/schemas
 * (zod's `$defs` are moved there), an object whose keys are free says so
 * (`additionalProperties: true`), and every operation has a unique `operationId`.
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
  /** Unique in the document; default: the `:method` name, else the method and the path's words. */
  operationId?: string;
  summary: string;
  body?: z.ZodType;
  query?: z.ZodObject;
  response: Json;
  errors: readonly (keyof typeof ERROR_STATUS)[];
}

const COMPONENTS = '#/components/schemas/';

/** Schemas named by zod (`.meta({ id })`), collected while the document is built. */
type Named = Map<string, Json>;

/**
 * A zod schema as JSON Schema for the document: its `$defs` move to `named` (references rewritten
 * to components/schemas), and an object schema without properties is marked open.
 */
function schemaOf(s: z.ZodType, named: Named, io: 'input' | 'output' = 'input'): Json {
  const out = z.toJSONSchema(s, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  delete out.$schema;
  const defs = (out.$defs ?? {}) as Record<string, Json>;
  delete out.$defs;
  for (const [name, def] of Object.entries(defs)) named.set(name, tidy(def) as Json);
  return tidy(out) as Json;
}

function tidy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(tidy);
  if (typeof value !== 'object' || value === null) return value;
  const out: Json = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key] = key === '$ref' && typeof inner === 'string' && inner.startsWith('#/$defs/') ? COMPONENTS + inner.slice('#/$defs/'.length) : tidy(inner);
  }
  const isObject = out.type === 'object' || (Array.isArray(out.type) && out.type.includes('object'));
  if (isObject && out.properties === undefined && out.additionalProperties === undefined) out.additionalProperties = true;
  return out;
}

/** The default `operationId`: `subscribeToEventsFrom`, or `getV1Streams` for a path without `:method`. */
function operationIdOf(op: OpenApiOperation): string {
  if (op.operationId !== undefined) return op.operationId;
  const colon = op.path.lastIndexOf(':');
  if (colon !== -1) return op.path.slice(colon + 1);
  const words = op.path.split(/[^A-Za-z0-9]+/).filter((w) => w !== '');
  return op.method + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

const eventRef = { $ref: `${COMPONENTS}CommittedEvent` };
const jsonObject = (properties: Json, required: string[] = Object.keys(properties)): Json => ({
  type: 'object',
  properties,
  required,
});

export const coreOperations: OpenApiOperation[] = [
  {
    path: '/v1/streams/{path}',
    method: 'post',
    operationId: 'appendEvents',
    summary: 'Append one event, or an array of events atomically',
    body: AppendBodySchema,
    response: jsonObject({ events: { type: 'array', items: eventRef } }),
    errors: ['INVALID_INPUT', 'FORBIDDEN', 'CONFLICT', 'PRECONDITION_FAILED', 'PAYLOAD_TOO_LARGE', 'LIMIT_EXCEEDED'],
  },
  {
    path: '/v1/streams/{path}',
    method: 'get',
    operationId: 'readEvents',
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
    operationId: 'destroyStream',
    summary: 'Destroy a stream: erase every row; the next touch starts a new lifetime',
    response: jsonObject({ destroyed: { const: true } }),
    errors: ['INVALID_INPUT'],
  },
  {
    path: '/v1/streams/{path}:state',
    method: 'get',
    operationId: 'getStreamState',
    summary: 'Reduced core state and runtime state',
    response: jsonObject({ core: { type: ['object', 'null'] }, runtime: { type: ['object', 'null'] } }),
    errors: ['INVALID_INPUT'],
  },
  {
    path: '/v1/streams',
    method: 'get',
    operationId: 'listStreams',
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
  const named: Named = new Map();
  const ids = new Set<string>();
  for (const op of operations) {
    const operationId = operationIdOf(op);
    if (ids.has(operationId)) throw new Error(`two OpenAPI operations are named "${operationId}"`);
    ids.add(operationId);
    const parameters: Json[] = [];
    if (op.path.includes('{path}')) {
      parameters.push({
        name: 'path',
        in: 'path',
        required: true,
        description:
          'The stream path without its leading "/" (empty for the root stream). Its "/" may be sent plain or encoded as %2F (protocol §2.4)',
        schema: { type: 'string' },
      });
    }
    if (op.query) {
      const q = schemaOf(op.query, named) as { properties?: Record<string, Json>; required?: string[] };
      for (const [name, s] of Object.entries(q.properties ?? {})) {
        parameters.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema: s });
      }
    }
    const responses: Json = {
      '200': { description: 'OK', content: { 'application/json': { schema: tidy(op.response) } } },
    };
    for (const code of op.errors) {
      responses[String(ERROR_STATUS[code])] = {
        description: code,
        content: { 'application/json': { schema: { $ref: `${COMPONENTS}Error` } } },
      };
    }
    const operation: Json = { operationId, summary: op.summary, parameters, responses };
    if (op.body) operation.requestBody = { required: true, content: { 'application/json': { schema: schemaOf(op.body, named) } } };
    paths[op.path] = { ...(paths[op.path] ?? {}), [op.method]: operation };
  }
  const committed = schemaOf(CommittedEventSchema, named, 'output');
  // The schema that carries an id is only a reference to its own definition.
  if (committed.$ref !== `${COMPONENTS}CommittedEvent`) named.set('CommittedEvent', committed);
  return {
    openapi: '3.1.0',
    info: { title: 'Rivulet', version, description: 'Durable event streams with durable subscriptions' },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        ...Object.fromEntries(named),
        Error: tidy(
          jsonObject({
            error: jsonObject({ code: { enum: ERROR_CODES }, message: { type: 'string' }, details: {} }, ['code', 'message']),
          }),
        ),
      },
    },
    security: [{ bearer: [] }, {}],
    paths,
  };
}
