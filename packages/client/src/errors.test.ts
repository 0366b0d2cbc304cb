import { describe, expect, it } from 'vitest';
import { errorFromResponse, networkError } from './errors.js';

const errorBody = (error: unknown) => JSON.stringify({ error });

describe('errorFromResponse', () => {
  it('keeps the code, message and details of the pinned error body', async () => {
    const response = new Response(errorBody({ code: 'CONFLICT', message: 'idempotency key taken', details: { key: 'k' } }), {
      status: 409,
    });
    const error = await errorFromResponse(response);
    expect([error.code, error.message, error.details]).toEqual(['CONFLICT', 'idempotency key taken', { key: 'k' }]);
  });

  it('derives the code from the status when the body is not the error shape', async () => {
    const cases: [number, string, string][] = [
      [502, '<html>Bad Gateway</html>', 'UNAVAILABLE'],
      [504, '', 'UNAVAILABLE'],
      [404, 'Not Found', 'NOT_FOUND'],
      [418, '', 'INVALID_INPUT'],
      [500, errorBody({ code: 'NO_SUCH_CODE', message: 'x' }), 'INTERNAL'],
    ];
    for (const [status, body, code] of cases) {
      const error = await errorFromResponse(new Response(body, { status }));
      expect(error.code).toBe(code);
      expect(error.message).toContain(`server answered ${status}`);
      expect(error.details).toEqual({ status });
    }
  });
});

describe('networkError', () => {
  it('is UNAVAILABLE, names the URL and the underlying reason, and keeps the cause', () => {
    const cause = new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:9') });
    const error = networkError('http://127.0.0.1:9/healthz', cause);
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.message).toBe('cannot reach http://127.0.0.1:9/healthz: fetch failed (connect ECONNREFUSED 127.0.0.1:9)');
    expect(error.cause).toBe(cause);
  });
});
