import { RivuletError } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { HttpClient, type FetchLike } from './http.js';

function recording(answer: () => Response | Promise<Response>) {
  const seen: { url: string; init: RequestInit }[] = [];
  const fetch: FetchLike = async (url, init) => {
    seen.push({ url, init });
    return answer();
  };
  return { fetch, seen };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('HttpClient', () => {
  it('sends the token, the project and a JSON body', async () => {
    const { fetch, seen } = recording(() => Response.json({ ok: true }));
    const http = new HttpClient({ fetch, token: 'secret-token', projectId: 'proj-a' });
    expect(await http.json('POST', 'http://x/v1/streams/a', { body: { type: 't' } })).toEqual({ ok: true });
    const headers = new Headers(seen[0]!.init.headers);
    expect(headers.get('authorization')).toBe('Bearer secret-token');
    expect(headers.get('x-project-id')).toBe('proj-a');
    expect(headers.get('content-type')).toBe('application/json');
    expect(seen[0]!.init.body).toBe('{"type":"t"}');
  });

  it('sends no credentials it was not given', async () => {
    const { fetch, seen } = recording(() => Response.json({}));
    await new HttpClient({ fetch }).json('GET', 'http://x/healthz');
    const headers = new Headers(seen[0]!.init.headers);
    expect(headers.has('authorization')).toBe(false);
    expect(headers.has('x-project-id')).toBe(false);
  });

  it('calls an injected fetch as a plain function, as browsers require of window.fetch', async () => {
    const picky = function (this: unknown) {
      if (this !== undefined && this !== globalThis) throw new TypeError('Illegal invocation');
      return Promise.resolve(Response.json({ ok: true }));
    } as FetchLike;
    expect(await new HttpClient({ fetch: picky }).json('GET', 'http://x/healthz')).toEqual({ ok: true });
  });

  it('reports a 2xx answer that is not JSON as INTERNAL', async () => {
    const { fetch } = recording(() => new Response('<html>', { status: 200 }));
    const error = await rejection(new HttpClient({ fetch }).json('GET', 'http://x/healthz'));
    expect(error).toBeInstanceOf(RivuletError);
    expect((error as RivuletError).code).toBe('INTERNAL');
  });

  it('rethrows the caller abort reason instead of wrapping it', async () => {
    const controller = new AbortController();
    const reason = new Error('user gave up');
    const fetch: FetchLike = (_url, init) =>
      new Promise((_resolve, reject) => init.signal?.addEventListener('abort', () => reject(init.signal?.reason)));
    const pending = new HttpClient({ fetch }).json('GET', 'http://x/healthz', { signal: controller.signal });
    controller.abort(reason);
    expect(await rejection(pending)).toBe(reason);
  });

  it('does not send a request when the signal is already aborted', async () => {
    const { fetch, seen } = recording(() => Response.json({}));
    const reason = new Error('already');
    const error = await rejection(new HttpClient({ fetch }).json('GET', 'http://x/healthz', { signal: AbortSignal.abort(reason) }));
    expect(error).toBe(reason);
    expect(seen).toHaveLength(0);
  });
});
