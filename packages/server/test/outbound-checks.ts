/**
 * The conformance checks of the outbound port (ports/outbound.ts): every adapter runs the same
 * checks of the rules written in the port's header — one request and never a redirect followed; at
 * most `maxResponseBytes` of a body read and the rest never buffered; the signal ends the request
 * at once; whatever is not an answer rejects with an Error naming the destination. A request the
 * signal ended must reject, promptly; what its Error says is left to the adapter (the Node adapter
 * rejects with the signal's reason, which the sender set).
 *
 * Like the storage checks (storage-checks.ts) they know neither the adapter nor the test runner:
 * `defineOutboundChecks` takes the runner's functions and a factory of adapters, and the checks
 * talk to the path-driven server of helpers/outbound-server.ts through its URL only (`fetch` for
 * its statistics), so the same checks run under vitest in Node (outbound-conformance.test.ts) and
 * inside workerd (test/cloudflare/ports.test.ts). Nothing here may import Node modules.
 */
import type { OutboundHttp, OutboundPost } from '../src/ports/outbound.js';
import type { ConformanceApi } from './storage-checks.js';

export interface OutboundUnderTest {
  /** An adapter that may reach loopback destinations, reading at most `maxResponseBytes` (default its own). */
  make(options?: { maxResponseBytes?: number }): OutboundHttp;
  /** The test server's base URL (helpers/outbound-server.ts) and a loopback URL that refuses connections. */
  serverUrl: string;
  refusedUrl: string;
  /** Ends what `make` opened (kept-alive connections). */
  cleanup(): void | Promise<void>;
}

interface Stats {
  hits: number;
  closed: boolean;
  bytesOut: number;
}

/** How long "at once" may take: a generous bound for loaded machines, far below any timeout that would hide a wait. */
const PROMPT_MS = 1_000;
const MAX = 1_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

let ids = 0;

export function defineOutboundChecks(t: ConformanceApi, name: string, factory: () => Promise<OutboundUnderTest>): void {
  const { describe, it, beforeEach, afterEach, expect } = t;

  describe(`${name} keeps the outbound port's contract`, () => {
    let under: OutboundUnderTest;
    let id: string;

    beforeEach(async () => {
      under = await factory();
      id = `${Date.now().toString(36)}-${++ids}`;
    });
    afterEach(() => under.cleanup());

    const url = (behaviour: string, which = id) => `${under.serverUrl}/${behaviour}/${which}`;
    const post = (signal = new AbortController().signal, body = '{"n":1}'): OutboundPost => ({
      headers: { 'content-type': 'application/json', 'x-conformance': 'yes' },
      body,
      signal,
    });
    const stats = async (which = id): Promise<Stats> => (await (await fetch(`${under.serverUrl}/_stats/${which}`)).json()) as Stats;
    const until = async (what: string, probe: (s: Stats) => boolean, which = id): Promise<Stats> => {
      const deadline = Date.now() + 3_000;
      for (;;) {
        const s = await stats(which);
        if (probe(s)) return s;
        if (Date.now() > deadline) throw new Error(`the test server never saw ${what} (${JSON.stringify(s)})`);
        await sleep(10);
      }
    };
    /** The rejection of `pending`, and how long after `since` it came. */
    const rejection = async (pending: Promise<unknown>, since: number): Promise<{ error: unknown; ms: number }> => {
      try {
        await pending;
      } catch (error) {
        return { error, ms: Date.now() - since };
      }
      throw new Error('the request resolved; it should have rejected');
    };
    const destination = () => new URL(under.serverUrl).host;

    it('tells onSent once, before the answer, and never for a destination that refuses connections', async () => {
      const order: string[] = [];
      const told = { ...post(), onSent: () => order.push('sent') };
      const answer = await under.make().post(url('echo'), told);
      order.push('answered');
      expect(answer.status).toBe(200);
      expect(order).toEqual(['sent', 'answered']);
      const refusedOrder: string[] = [];
      await rejection(under.make().post(under.refusedUrl, { ...post(), onSent: () => refusedOrder.push('sent') }), Date.now());
      // The fetch adapter may tell it as soon as fetch was called; the Node adapter only once written.
      expect(refusedOrder.length).toBeLessThanOrEqual(1);
    });

    it('sends one POST with the headers and body given and answers its status and body', async () => {
      const answer = await under.make().post(url('echo'), post(undefined, '{"hello":"world"}'));
      expect(answer.status).toBe(200);
      expect(answer.statusText).toBe('OK');
      const echoed = JSON.parse(answer.body) as { method: string; headers: Record<string, string>; body: string };
      expect(echoed.method).toBe('POST');
      expect(echoed.headers['x-conformance']).toBe('yes');
      expect(echoed.headers['content-type']).toBe('application/json');
      expect(echoed.body).toBe('{"hello":"world"}');
      expect((await stats()).hits).toBe(1);
    });

    it('answers a 3xx as it is and never follows the redirect', async () => {
      const answer = await under.make().post(url('redirect'), post());
      expect(answer.status).toBe(302);
      expect(answer.statusText).toBe('Found');
      await sleep(50);
      expect((await stats()).hits).toBe(1);
      expect((await stats(`${id}-target`)).hits).toBe(0);
    });

    it('reads at most maxResponseBytes of an endless body and never the rest', async () => {
      const answer = await under.make({ maxResponseBytes: MAX }).post(url('endless'), post());
      expect(answer.status).toBe(200);
      expect(answer.body.length).toBeGreaterThan(0);
      expect(answer.body.length).toBeLessThanOrEqual(MAX);
      expect(answer.body).toBe('x'.repeat(answer.body.length));
      // Nothing goes on reading in the background: what the server could write stops growing.
      await sleep(200);
      const before = (await stats()).bytesOut;
      await sleep(300);
      const after = (await stats()).bytesOut;
      expect(after - before).toBeLessThan(1024 * 1024);
      expect(after).toBeLessThan(64 * 1024 * 1024);
    });

    for (const [what, route, reached] of [
      ['a request that gets no answer', 'hang', (s: Stats) => s.hits === 1],
      ['a request whose body is still arriving', 'trickle', (s: Stats) => s.bytesOut >= 3],
    ] as const) {
      it(`the signal ends ${what}, at once`, async () => {
        const abort = new AbortController();
        const pending = under.make().post(url(route), post(abort.signal));
        pending.catch(() => undefined);
        await until(route === 'hang' ? 'the request' : 'the body start', reached);
        const since = Date.now();
        abort.abort(new Error('delivery timed out'));
        const { error, ms } = await rejection(pending, since);
        expect(error).toBeInstanceOf(Error);
        expect(ms).toBeLessThan(PROMPT_MS);
        await until('the connection close', (s) => s.closed);
      });
    }

    it('a signal aborted before the call rejects at once, and nothing is sent', async () => {
      const abort = new AbortController();
      abort.abort(new Error('delivery timed out'));
      const since = Date.now();
      const { error, ms } = await rejection(under.make().post(url('echo'), post(abort.signal)), since);
      expect(error).toBeInstanceOf(Error);
      expect(ms).toBeLessThan(PROMPT_MS);
      await sleep(50);
      expect((await stats()).hits).toBe(0);
    });

    it('a refused connection rejects with an Error naming the destination', async () => {
      const { error } = await rejection(under.make().post(under.refusedUrl, post()), Date.now());
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toContain(new URL(under.refusedUrl).host);
    });

    it('a connection closed without an answer rejects with an Error naming the destination', async () => {
      const { error } = await rejection(under.make().post(url('reset'), post()), Date.now());
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toContain(destination());
    });

    it('a connection cut in the middle of the body still answers its status (the status is the answer)', async () => {
      const answer = await under.make().post(url('cut'), post());
      expect(answer.status).toBe(200);
    });
  });
}
