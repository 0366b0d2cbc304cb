/**
 * `POST /v1/admin/backup` in the shared app (protocol §15.5): admin only (none UNAUTHENTICATED, a
 * project token FORBIDDEN), NOT_FOUND on a host without backups (the Worker host), and the answer's
 * headers and bytes from the host's snapshot.
 */
import { describe, expect, it } from 'vitest';
import { createServerMetrics } from '../engine/metrics.js';
import type { StreamService } from '../engine/service.js';
import { createApp, type AppOptions } from './app.js';

const ADMIN = 'admin-token-0123456789';
const PROJECT = 'project-token-0123456789';
const service = {} as StreamService;
const snapshot = async () => ({ bytes: 5, format: 3, body: new Blob(['hello']).stream() });

function app(options: Partial<AppOptions>) {
  const created = createApp({
    service,
    tokens: new Map([[ADMIN, '*'], [PROJECT, 'acme']]),
    metrics: createServerMetrics(),
    maxBodyBytes: 1000,
    logger: { error: () => undefined },
    ...options,
  });
  return (token?: string) =>
    created.fetch(new Request('http://localhost/v1/admin/backup', { method: 'POST', headers: token ? { authorization: `Bearer ${token}` } : {} }));
}

const errorOf = async (res: Response) => [res.status, ((await res.json()) as { error: { code: string; message: string } }).error];

describe('POST /v1/admin/backup', () => {
  it('needs an admin token', async () => {
    const send = app({ backup: snapshot });
    expect(await errorOf(await send())).toEqual([401, { code: 'UNAUTHENTICATED', message: 'missing token: send Authorization: Bearer <token>' }]);
    expect(await errorOf(await send(PROJECT))).toEqual([
      403,
      { code: 'FORBIDDEN', message: '/v1/admin/backup copies every project on this server: it needs an admin token (project "*")' },
    ]);
  });

  it('answers the snapshot with its length and format', async () => {
    const res = await app({ backup: snapshot })(ADMIN);
    expect(res.status).toBe(200);
    expect([res.headers.get('content-type'), res.headers.get('content-length'), res.headers.get('x-rivulet-storage-format')]).toEqual([
      'application/vnd.sqlite3',
      '5',
      '3',
    ]);
    expect(await res.text()).toBe('hello');
  });

  it('is NOT_FOUND on a host that takes no backups, and in open mode every caller is admin', async () => {
    expect(await errorOf(await app({})(ADMIN))).toEqual([
      404,
      { code: 'NOT_FOUND', message: 'this host takes no backups through the API (on Cloudflare, use point-in-time recovery of the Durable Objects)' },
    ]);
    expect((await app({ backup: snapshot, tokens: null })()).status).toBe(200);
  });
});
