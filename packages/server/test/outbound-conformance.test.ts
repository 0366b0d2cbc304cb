/**
 * The outbound port's conformance checks (outbound-checks.ts) against the adapters that run in
 * Node: the Node host's adapter over undici (hosts/node/outbound.ts) and the Worker host's fetch
 * adapter (hosts/worker/outbound.ts) over Node's fetch. The fetch adapter runs the same checks
 * inside workerd too (test/cloudflare/ports.test.ts).
 */
import { afterAll, beforeAll, beforeEach, afterEach, describe, expect, it } from 'vitest';
import { nodeOutbound, type NodeOutbound } from '../src/hosts/node/outbound.js';
import { fetchOutbound } from '../src/hosts/worker/outbound.js';
import type { OutboundHttp } from '../src/ports/outbound.js';
import { OutboundTestServer } from './helpers/outbound-server.js';
import { defineOutboundChecks } from './outbound-checks.js';

let server: OutboundTestServer;

beforeAll(async () => {
  server = await OutboundTestServer.start();
});
afterAll(() => server.stop());

const api = { describe, it, beforeEach, afterEach, expect };

defineOutboundChecks(api, 'nodeOutbound (hosts/node/outbound.ts)', async () => {
  const made: NodeOutbound[] = [];
  return {
    make: (options) => {
      const http = nodeOutbound({ allowPrivate: true, ...options });
      made.push(http);
      return http;
    },
    serverUrl: server.url,
    refusedUrl: server.refusedUrl,
    cleanup: () => {
      for (const http of made) http.close();
    },
  };
});

defineOutboundChecks(api, 'fetchOutbound (hosts/worker/outbound.ts) over Node fetch', async () => ({
  make: (options): OutboundHttp => fetchOutbound({ allowPrivate: true, ...options }),
  serverUrl: server.url,
  refusedUrl: server.refusedUrl,
  cleanup: () => undefined,
}));
