/**
 * Regular expressions in JSONata (protocol §16.8), on both hosts: a pattern that backtracks
 * exponentially ends in linear time instead of holding the server — on the Node host through V8's
 * fallback engine (hosts/node/regexp-fallback.ts), on the Worker host through the linear-time
 * engine (core/regex-engine.ts) — and patterns those engines cannot run with JavaScript's meaning
 * are refused when configured. Without them, the condition below on forty `a`s and a `b` runs for
 * longer than the test lives. So the server runs in a process of its own (the Node CLI in a child
 * process; the Worker host in workerd): were the engine missing, that process would hang and these
 * tests would fail on their timeouts, instead of blocking the test worker for good.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServe } from '../helpers/cli.js';
import { Api } from '../helpers/http.js';
import { TEST_HOST, startTestServer, tempDir } from '../helpers/server.js';
import { caughtUp, command, copiesOn, subscribe } from '../helpers/subscriptions.js';

let stop: () => Promise<unknown>;
const server = {} as { api: Api };
beforeAll(async () => {
  if (TEST_HOST === 'worker') {
    const worker = await startTestServer({ retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 3 });
    server.api = worker.api;
    stop = () => worker.close();
    return;
  }
  const dir = await tempDir('rivulet-regex-');
  const child = await spawnServe(['--data', dir.dir, '--retry-base-ms', '10', '--retry-max-ms', '50', '--max-delivery-attempts', '3']);
  server.api = new Api(child.url);
  stop = async () => {
    await child.kill('SIGKILL');
    await dir.remove();
  };
});
afterAll(async () => {
  await stop?.();
});

const EXPONENTIAL = '$contains(payload.s, /(a+)+$/)';

describe('regular expressions that backtrack', () => {
  it('a waitForEvent condition that would backtrack exponentially is judged in milliseconds', async () => {
    const { api } = server;
    await api.append('/re/wait', { type: 'job', payload: { s: `${'a'.repeat(40)}b` } });
    const t0 = performance.now();
    const res = await command(api, '/re/wait', 'waitForEvent', { afterOffset: 0, timeoutMs: 300, jsonataCondition: EXPONENTIAL });
    // No match (the string ends in b): the wait times out as it would for any condition.
    expect(res.status).toBe(408);
    expect((res.body as { error: { code: string } }).error.code).toBe('TIMEOUT');
    expect(performance.now() - t0).toBeLessThan(3000);
    // While the hostile event is judged again, a plain append elsewhere is answered at once.
    const again = command(api, '/re/wait', 'waitForEvent', { afterOffset: 0, timeoutMs: 300, jsonataCondition: EXPONENTIAL });
    const t1 = performance.now();
    expect((await api.post('/re/other', { type: 'ping' })).status).toBe(200);
    expect(performance.now() - t1).toBeLessThan(1000);
    expect((await again).status).toBe(408);
  });

  it('a subscription with such a condition copies what matches and passes over what does not', async () => {
    const { api } = server;
    await subscribe(api, '/re/dst', { sourceStreamPath: '/re/src', subscriptionKey: 're', filter: { jsonataCondition: EXPONENTIAL }, delivery: { start: 'beginning' } });
    const appended = await api.append('/re/src', [
      { type: 'job', payload: { s: `${'a'.repeat(40)}b` } },
      { type: 'job', payload: { s: 'aaa' } },
    ]);
    expect((await caughtUp(api, '/re/src', 're')).acknowledgedOffset).toBe(appended.at(-1)!.offset);
    expect((await copiesOn(api, '/re/dst')).map((e) => (e.payload as { s: string }).s)).toEqual(['aaa']);
  });

  it('a transform answers $match, $replace and $split as JavaScript does, case folding and anchors included', async () => {
    const { api } = server;
    await subscribe(api, '/re/shaped', {
      sourceStreamPath: '/re/people',
      subscriptionKey: 'shape',
      filter: { jsonataCondition: '$contains(payload.email, /@example\\.com$/i)' },
      jsonataTransform: '{"type": type, "payload": {"m": $match(payload.email, /^(\\w+)(\\.x)?@/), "r": $replace(payload.note, /^(\\w)/m, "<$1>"), "s": $split(payload.note, /\\s*,\\s*/), "k": $contains("\u212A", /k/i)}}',
      delivery: { start: 'beginning' },
    });
    const appended = await api.append('/re/people', [
      { type: 'person', payload: { email: 'ann@EXAMPLE.com', note: 'a , b\r\nc' } },
      { type: 'person', payload: { email: 'bob@example.org', note: 'x' } },
    ]);
    expect((await caughtUp(api, '/re/people', 'shape')).acknowledgedOffset).toBe(appended.at(-1)!.offset);
    expect((await copiesOn(api, '/re/shaped')).map((e) => e.payload)).toEqual([
      { m: { match: 'ann@', index: 0, groups: ['ann', null] }, r: '<a> , b\r\n<c>', s: ['a', 'b\r\nc'], k: false },
    ]);
  });

  it.each([
    ['a group repeated with a capture some repetitions skip', '$contains(payload.s, /(?:(a)|b)+/)', '`(?:(a)|b)+` repeats a capturing group `(a)` that some repetitions skip, which the linear-time engine captures differently (use a non-capturing group): /(?:(a)|b)+/'],
    ['a repeated part that can match nothing', '$contains(payload.s, /(a*)*/)', '`(a*)*` repeats a part that can match the empty string, which the linear-time engine matches differently: /(a*)*/'],
  ])('%s is refused when configured, on every host: INVALID_INPUT with the reason', async (_what, condition, reason) => {
    const res = await command(server.api, '/re/never', 'subscribeToEventsFrom', { sourceStreamPath: '/re/refused', subscriptionKey: 'y', filter: { jsonataCondition: condition } });
    expect(res.status).toBe(400);
    expect((res.body as { error: { code: string; message: string } }).error).toEqual(
      expect.objectContaining({
        code: 'INVALID_INPUT',
        message: `filter.jsonataCondition uses a regular expression that cannot be bounded in time with JavaScript's meaning: ${reason}`,
      }),
    );
  });

  it.each([
    ['a backreference', '$contains(payload.s, /(a)\\1/)', '/(a)\\1/'],
    ['a named backreference', '$contains(payload.s, /(?<x>a)\\k<x>/)', '/(?<x>a)\\k<x>/'],
    ['a lookahead', '$contains(payload.s, /a(?=b)/)', '/a(?=b)/'],
    ['a negative lookbehind', '$contains(payload.s, /(?<!b)a/)', '/(?<!b)a/'],
  ])('%s is refused when configured: INVALID_INPUT naming the pattern', async (_what, condition, shown) => {
    const res = await command(server.api, '/re/never', 'subscribeToEventsFrom', { sourceStreamPath: '/re/refused', subscriptionKey: 'x', filter: { jsonataCondition: condition } });
    expect(res.status).toBe(400);
    expect((res.body as { error: { code: string; message: string } }).error).toEqual(
      expect.objectContaining({
        code: 'INVALID_INPUT',
        message: `filter.jsonataCondition uses a regular expression with a backreference or a lookaround, which cannot be bounded in time: ${shown}`,
      }),
    );
  });
});
