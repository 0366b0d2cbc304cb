/**
 * End-to-end over real HTTP: liveness and readiness (protocol §15.1) on both hosts; on the Node
 * host, a disk without room makes the server not ready while it still lives and answers reads.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/http.js';
import { TEST_HOST, startTestServer, type TestServer } from '../helpers/server.js';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

describe('liveness and readiness', () => {
  it('/livez and /readyz answer 200 {"ok": true} without a token once started', async () => {
    const server = await startTestServer({ tokens: new Map([['admin-token-000000000000', '*']]) });
    servers.push(server);
    for (const path of ['/livez', '/readyz']) {
      const res = await server.api.request('GET', path);
      expect(res.status, path).toBe(200);
      expect(res.body).toEqual({ ok: true });
    }
  });

  it.skipIf(TEST_HOST === 'worker')('a disk without room: /readyz is 503 naming it, /livez stays 200', async () => {
    const server = await startTestServer({ freeBytes: () => 1024 * 1024 });
    servers.push(server);
    expectError(
      await server.api.request('GET', '/readyz'),
      'UNAVAILABLE',
      /^not ready: the disk of \S+ is full or nearly \(1 MiB free, 64 MiB needed\)$/,
    );
    expect((await server.api.request('GET', '/livez')).status).toBe(200);
  });
});
