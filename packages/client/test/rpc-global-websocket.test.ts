/**
 * `connect` on a Node that has a global WebSocket (Node 22 and later; Node 20 with
 * `--experimental-websocket`, which this test uses to be that Node here): the SDK still opens its
 * session with the `ws` package, so the token travels in a header and a refused upgrade rejects
 * with the server's own code (protocol §8, §18.1) — a browser-style WebSocket hides the HTTP
 * status and every refusal would read as UNAVAILABLE. The SDK runs from its build (npm test
 * builds first) in a child process started with the flag.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './harness.js';

const run = promisify(execFile);
const CLIENT = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const TOKEN_A = 'alpha-token-000000000000';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({ tokens: new Map([[TOKEN_A, 'alpha']]) });
});

afterAll(async () => {
  await t?.dispose();
});

/** Connects from a Node with a global WebSocket; answers what happened. */
async function connectWithGlobalWebSocket(options: Record<string, unknown>): Promise<{ global: string; outcome: string }> {
  const script = `
    const { connect } = await import(${JSON.stringify(CLIENT)});
    const global = typeof WebSocket;
    try {
      const itx = await connect(${JSON.stringify(t.url)}, { reconnect: false, ...${JSON.stringify(options)} });
      const page = await itx.root.streams.get('/ws/a').getEvents();
      itx.close();
      console.log(JSON.stringify({ global, outcome: 'open ' + page.events.length }));
    } catch (error) {
      console.log(JSON.stringify({ global, outcome: error.code + ' ' + error.message }));
    }
    process.exit(0);
  `;
  const { stdout } = await run(process.execPath, ['--experimental-websocket', '--no-warnings', '--input-type=module', '-e', script], { timeout: 20_000 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as { global: string; outcome: string };
}

describe('connect where the runtime has a global WebSocket', () => {
  it('a missing token rejects with UNAUTHENTICATED, an unknown one too, and a valid one opens a session', async () => {
    const missing = await connectWithGlobalWebSocket({});
    expect(missing.global).toBe('function');
    expect(missing.outcome).toBe('UNAUTHENTICATED missing token: send Authorization: Bearer <token>');
    expect((await connectWithGlobalWebSocket({ token: 'not-a-token-0000000000' })).outcome).toBe('UNAUTHENTICATED unknown token');
    expect((await connectWithGlobalWebSocket({ token: TOKEN_A, projectId: 'beta' })).outcome).toMatch(/^FORBIDDEN /);
    expect((await connectWithGlobalWebSocket({ token: TOKEN_A })).outcome).toBe('open 0');
  });
});
