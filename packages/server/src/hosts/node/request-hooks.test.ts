/**
 * The Node host's three entrances report to the same request hooks (http/request-hooks.ts), the
 * way serve.ts composes them: the connection front (front.ts), the native node:http append path
 * (append.ts) once the connection was handed over, and the Hono app. One keep-alive connection goes
 * through all three; each answer must carry the hooks' header fields, and the hooks must see each
 * request once, with its route and status.
 */
import { createServer, request as httpRequest, Agent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServerMetrics } from '../../engine/metrics.js';
import type { StreamService } from '../../engine/service.js';
import { createApp } from '../../http/app.js';
import { composeRequestHooks, type AnsweredRequest } from '../../http/request-hooks.js';
import { appendAnswerer, isPlainAppendTarget, isPlainHost, nativeAppend, type AppendAnswerer } from './append.js';
import { attachFront, type Front } from './front.js';

interface Reply {
  status: number;
  origin: string | undefined;
  body: string;
  port: number;
}

describe('the request hooks on every entrance of the Node host', () => {
  const seen: AnsweredRequest[] = [];
  /** Appends the host's answerer (the front's and the native path's) was asked for. */
  let hostAppends = 0;
  let server: Server;
  let front: Front;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const logger = { error: () => undefined };

  beforeAll(async () => {
    const service = { append: async () => [] } as unknown as StreamService;
    const hooks = composeRequestHooks(
      [
        { onAnswered: (a) => seen.push(a) },
        { answerHeaders: (_a, request) => [['access-control-allow-origin', request.get('origin') ?? '*']] },
      ],
      logger,
    );
    const maxBodyBytes = 1000;
    const app = createApp({ service, tokens: null, metrics: createServerMetrics(), maxBodyBytes, logger, hooks });
    const answer = appendAnswerer({ service, tokens: null, maxBodyBytes, logger, hooks });
    const counted: AppendAnswerer = (...args) => {
      hostAppends++;
      return answer(...args);
    };
    const listener = getRequestListener(app.fetch);
    const native = nativeAppend(counted, logger);
    server = createServer((incoming, outgoing) => {
      if (!native(incoming, outgoing)) void listener(incoming, outgoing);
    });
    front = attachFront(server, {
      answer: counted,
      rules: { maxBodyBytes, accepts: (target, host) => isPlainAppendTarget(target) && isPlainHost(host) },
      log: () => undefined,
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    agent.destroy();
    front.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  function send(method: string, path: string, body: string | null, headers: Record<string, string>): Promise<Reply> {
    const { port } = server.address() as AddressInfo;
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port, method, path, agent, headers: { origin: 'https://app.example', ...headers } },
        (res) => {
          // Read now: the agent takes the socket back once the answer has ended.
          const localPort = res.socket.localPort!;
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () =>
            resolve({
              status: res.statusCode!,
              origin: res.headers['access-control-allow-origin'] as string | undefined,
              body: text,
              port: localPort,
            }),
          );
        },
      );
      req.on('error', reject);
      if (body === null) req.end();
      else {
        req.write(body);
        req.end();
      }
    });
  }

  const append = (body: string, contentType = 'application/json') =>
    send('POST', '/v1/streams/a/b', body, { 'content-type': contentType, 'content-length': String(Buffer.byteLength(body)) });

  it('front, then the app, then the native path, then the app again: each answer hooked once', async () => {
    const replies: Reply[] = [];
    const entrances: string[] = [];
    const step = async (reply: Promise<Reply>) => {
      const before = { hostAppends, handedOver: front.handedOver };
      replies.push(await reply);
      const byHost = hostAppends > before.hostAppends;
      entrances.push(byHost ? (before.handedOver === 0 ? 'front' : 'native') : 'app');
    };
    await step(append('{"type":"t/x"}'));
    await step(append('{"type":"t/x"}', 'text/plain'));
    await step(send('GET', '/healthz', null, {}));
    await step(append('{"type":"t/x"}'));
    await step(append('{"type":'));
    // Chunked: the native path leaves it to the app, whose append route is the same function.
    await step(send('POST', '/v1/streams/a/b', '{"type":"t/x"}', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }));

    expect(entrances).toEqual(['front', 'front', 'app', 'native', 'native', 'app']);
    expect(front.handedOver).toBe(1);
    // One connection throughout.
    expect(new Set(replies.map((r) => r.port)).size).toBe(1);
    expect(replies.map((r) => r.status)).toEqual([200, 400, 200, 200, 400, 200]);
    expect(replies[0]!.body).toBe('{"events":[]}');
    for (const reply of replies) expect(reply.origin).toBe('https://app.example');
    expect(seen.map(({ method, route, status, errorCode }) => [method, route, status, errorCode])).toEqual([
      ['POST', 'POST /v1/streams/{path}', 200, undefined],
      ['POST', 'POST /v1/streams/{path}', 400, 'INVALID_INPUT'],
      ['GET', 'GET /healthz', 200, undefined],
      ['POST', 'POST /v1/streams/{path}', 200, undefined],
      ['POST', 'POST /v1/streams/{path}', 400, 'INVALID_INPUT'],
      ['POST', 'POST /v1/streams/{path}', 200, undefined],
    ]);
  });
});
