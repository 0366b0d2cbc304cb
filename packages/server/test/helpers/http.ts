/**
 * A tiny fetch-based client for end-to-end tests. It speaks plain HTTP to the server (never the
 * SDK), keeps the raw status and text of every answer, and checks the error shape of protocol §1.3.
 */
import { request as httpRequest } from 'node:http';
import { expect } from 'vitest';
import type { CommittedEvent, CoreState, ErrorCode, ReadResponse, RuntimeState } from '@rivulet/contract';

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body (undefined when the body is not JSON). */
  body: T;
}

export interface RequestOptions {
  /** Serialised with JSON.stringify and sent as application/json. */
  json?: unknown;
  /** Sent as is (set content-type yourself through headers). */
  body?: string | Uint8Array<ArrayBuffer>;
  headers?: Record<string, string>;
}

export interface EventInput {
  type: string;
  payload?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  idempotencyKey?: string;
  ephemeral?: true;
  offset?: number;
  [key: string]: unknown;
}

export interface StateResponse {
  core: CoreState | null;
  runtime: RuntimeState | null;
}

export interface ErrorResponseBody {
  error: { code: ErrorCode; message: string; details?: unknown };
}

const STATUS: Record<ErrorCode, number> = {
  INVALID_INPUT: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  TIMEOUT: 408,
  CONFLICT: 409,
  PRECONDITION_FAILED: 412,
  PAYLOAD_TOO_LARGE: 413,
  LIMIT_EXCEEDED: 422,
  UNAVAILABLE: 503,
  INTERNAL: 500,
};

/** The URL route of a canonical stream path: each segment percent-encoded, the root is "/v1/streams/". */
export function streamRoute(path: string, method?: string): string {
  const segments = path === '/' ? [] : path.replace(/^\//, '').split('/');
  return `/v1/streams/${segments.map(encodeURIComponent).join('/')}${method ? `:${method}` : ''}`;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export class Api {
  constructor(
    readonly baseUrl: string,
    readonly defaultHeaders: Record<string, string> = {},
  ) {}

  /** The same server with extra headers on every request (a token, X-Project-Id). */
  with(headers: Record<string, string>): Api {
    return new Api(this.baseUrl, { ...this.defaultHeaders, ...headers });
  }

  withToken(token: string, projectId?: string): Api {
    return this.with({ authorization: `Bearer ${token}`, ...(projectId ? { 'x-project-id': projectId } : {}) });
  }

  async request<T = unknown>(method: string, route: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...this.defaultHeaders };
    let body: string | Uint8Array<ArrayBuffer> | undefined;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    } else if (options.body !== undefined) body = options.body;
    Object.assign(headers, options.headers ?? {});
    const response = await fetch(`${this.baseUrl}${route}`, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, body: parseJson(text) as T };
  }

  /** POST one event or a batch; answers the raw response (check it yourself). */
  post(path: string, events: EventInput | EventInput[], headers: Record<string, string> = {}): Promise<ApiResponse> {
    return this.request('POST', streamRoute(path), { json: events, headers });
  }

  /** POST that must succeed: the committed events. */
  async append(path: string, events: EventInput | EventInput[]): Promise<CommittedEvent[]> {
    const res = await this.post(path, events);
    expect(res.status, `append to ${path}: ${res.text}`).toBe(200);
    return (res.body as { events: CommittedEvent[] }).events;
  }

  async read(path: string, query: Record<string, string | number | boolean> = {}): Promise<ReadResponse> {
    const res = await this.request<ReadResponse>('GET', `${streamRoute(path)}${queryString(query)}`);
    expect(res.status, `read ${path}: ${res.text}`).toBe(200);
    return res.body;
  }

  /** Every durable event (or every event, with includeEphemeral), following pages of 500. */
  async readAll(path: string, query: Record<string, string | number | boolean> = {}): Promise<CommittedEvent[]> {
    const out: CommittedEvent[] = [];
    let after = 0;
    for (;;) {
      const page = await this.read(path, { ...query, afterOffset: after, limit: 500 });
      out.push(...page.events);
      if (page.events.length < 500) return out;
      after = page.events[page.events.length - 1]!.offset;
    }
  }

  async state(path: string): Promise<StateResponse> {
    const res = await this.request<StateResponse>('GET', streamRoute(path, 'state'));
    expect(res.status, `state ${path}: ${res.text}`).toBe(200);
    return res.body;
  }

  async destroy(path: string): Promise<void> {
    const res = await this.request('DELETE', streamRoute(path));
    expect(res.status, `destroy ${path}: ${res.text}`).toBe(200);
    expect(res.body).toEqual({ destroyed: true });
  }
}

export function queryString(query: Record<string, string | number | boolean>): string {
  const entries = Object.entries(query);
  if (entries.length === 0) return '';
  return `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString()}`;
}

/** Whether GET /v1/streams?prefix=<path> lists the stream at exactly `path` (protocol §6). */
export async function isListed(api: Api, path: string): Promise<boolean> {
  const res = await api.request<{ streams: { path: string }[] }>('GET', `/v1/streams?prefix=${encodeURIComponent(path)}`);
  expect(res.status, res.text).toBe(200);
  return res.body.streams.some((s) => s.path === path);
}

/**
 * Checks an error answer of protocol §1.3 and §7: the status of its code, the JSON shape, and the
 * message (a substring or a pattern). Answers the error for further checks.
 */
export function expectError(
  res: ApiResponse,
  code: ErrorCode,
  message: string | RegExp,
): ErrorResponseBody['error'] {
  const context = `expected ${code} but got ${res.status}: ${res.text}`;
  expect(res.status, context).toBe(STATUS[code]);
  expect(res.headers.get('content-type') ?? '', context).toMatch(/^application\/json/);
  const body = res.body as ErrorResponseBody | undefined;
  expect(body, context).toBeTypeOf('object');
  expect(Object.keys(body!), context).toEqual(['error']);
  expect(body!.error.code, context).toBe(code);
  expect(body!.error.message, context).toBeTypeOf('string');
  if (typeof message === 'string') expect(body!.error.message, context).toContain(message);
  else expect(body!.error.message, context).toMatch(message);
  return body!.error;
}

/**
 * A request sent with node:http so that the path reaches the server exactly as written (fetch and
 * the WHATWG URL parser would resolve "..", "." and "\" on the client side).
 */
export function rawRequest(
  baseUrl: string,
  method: string,
  rawPath: string,
  options: { body?: string | Buffer; headers?: Record<string, string>; chunked?: boolean } = {},
): Promise<ApiResponse> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method,
        path: rawPath,
        headers: {
          ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(options.body !== undefined && !options.chunked
            ? { 'content-length': String(Buffer.byteLength(options.body)) }
            : {}),
          ...options.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) {
            if (typeof v === 'string') headers.set(k, v);
            else if (Array.isArray(v)) for (const item of v) headers.append(k, item);
          }
          resolve({ status: res.statusCode ?? 0, headers, text, body: parseJson(text) });
        });
      },
    );
    req.on('error', reject);
    if (options.body !== undefined && options.chunked) {
      // Without content-length node:http sends "transfer-encoding: chunked": write a few chunks.
      const body = Buffer.from(options.body);
      const step = Math.ceil(body.length / 3);
      for (let at = 0; at < body.length; at += step) req.write(body.subarray(at, at + step));
    } else if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

/** A UUID in its canonical textual form. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
