/**
 * The one place the SDK touches the network. Every request carries the caller's credentials
 * (`Authorization: Bearer`, `X-Project-Id`, protocol §8); every outcome is either a parsed 2xx
 * body, a RivuletError, or the caller's abort reason (errors.ts). Works with any WHATWG fetch: Node
 * 20's global, a browser's, or one the caller injects.
 */
import { RivuletError } from '@rivulet/contract';
import { abortReason, errorFromResponse, networkError } from './errors.js';
import { currentToken, type TokenSource } from './token.js';

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface HttpOptions {
  /** A token, or a function asked for the current one before every request (token.ts). */
  token?: TokenSource | undefined;
  projectId?: string | undefined;
  fetch?: FetchLike | undefined;
}

export interface RequestOptions {
  signal?: AbortSignal | undefined;
  body?: unknown;
  headers?: Readonly<Record<string, string>>;
}

export class HttpClient {
  private readonly fetchImpl: FetchLike;
  private readonly baseHeaders: Record<string, string>;
  private readonly token: TokenSource | undefined;

  constructor(options: HttpOptions) {
    // Browsers throw "Illegal invocation" when fetch runs with a `this` other than the global (or
    // none), so neither the global nor an injected fetch is ever called as a method of this object.
    const injected = options.fetch;
    this.fetchImpl = injected ? (input, init) => injected(input, init) : (input, init) => globalThis.fetch(input, init);
    this.baseHeaders = {};
    this.token = typeof options.token === 'function' ? options.token : undefined;
    if (typeof options.token === 'string') this.baseHeaders.authorization = `Bearer ${options.token}`;
    if (options.projectId !== undefined) this.baseHeaders['x-project-id'] = options.projectId;
  }

  /** Sends a request and answers the response when its status is 2xx; throws otherwise. */
  async send(method: string, url: string, options: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { ...this.baseHeaders, ...options.headers };
    if (this.token !== undefined) {
      options.signal?.throwIfAborted();
      headers.authorization = `Bearer ${(await currentToken(this.token))!}`;
    }
    const init: RequestInit = { method, headers };
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(options.body);
    }
    if (options.signal) init.signal = options.signal;
    options.signal?.throwIfAborted();
    let response: Response;
    try {
      response = await this.fetchImpl(url, init);
    } catch (error) {
      if (options.signal?.aborted) throw abortReason(options.signal);
      throw networkError(url, error);
    }
    if (!response.ok) throw await errorFromResponse(response);
    return response;
  }

  /** A request whose 2xx answer is text (read whole). */
  async text(method: string, url: string, options: RequestOptions = {}): Promise<string> {
    const response = await this.send(method, url, options);
    try {
      return await response.text();
    } catch (error) {
      if (options.signal?.aborted) throw abortReason(options.signal);
      const reason = error instanceof Error ? error.message : String(error);
      throw new RivuletError('UNAVAILABLE', `the answer from ${url} broke off: ${reason}`, undefined, { cause: error });
    }
  }

  /** A request whose 2xx answer is a JSON document. */
  async json<T>(method: string, url: string, options: RequestOptions = {}): Promise<T> {
    const text = await this.text(method, url, { ...options, headers: { accept: 'application/json', ...options.headers } });
    try {
      return JSON.parse(text) as T;
    } catch (error) {
      throw new RivuletError('INTERNAL', `the answer from ${url} is not JSON`, { body: text.slice(0, 200) }, { cause: error });
    }
  }
}
