/**
 * `rivulet subscriptions …` and `rivulet subscribe` against a real server: what each prints, its
 * --json, and its exit codes (0 done, 1 the server refused, 2 a usage mistake).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type RivuletClient } from '@rivulet/client';
import { rivulet, startTestServer, type TestServer } from './harness.js';

let t: TestServer;
let client: RivuletClient;
let files: string;

beforeAll(async () => {
  files = mkdtempSync(join(tmpdir(), 'rivulet-cli-subs-'));
  t = await startTestServer({ retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 2 });
  client = createClient({ url: t.url });
});
afterAll(async () => {
  await t.dispose();
  rmSync(files, { recursive: true, force: true });
});

function file(name: string, content: string): string {
  const path = join(files, name);
  writeFileSync(path, content);
  return path;
}

async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 500; i++) {
    const found = await probe();
    if (found !== undefined) return found;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A copy subscription whose condition throws: it halts after two attempts. */
async function haltedOn(src: string, key: string): Promise<void> {
  const run = await rivulet(t.url, ['subscribe', src, '--copy-to', `${src}-r`, '--key', key, '--condition', '$error("boom")']);
  expect(run.code, run.stderr).toBe(0);
  await client.append(src, { type: 'x' });
  await until(async () => ((await client.state(src)).core?.subscriptions.outbound.byKey[key]?.deliveryHalted ? true : undefined), 'the halt');
}

describe('--help', () => {
  it('rivulet subscriptions lists its commands; each prints its usage', async () => {
    const top = await rivulet(t.url, ['subscriptions', '--help']);
    expect(top.code).toBe(0);
    for (const name of ['ls', 'show', 'resume', 'set-cursor', 'rm', 'preview']) {
      expect(top.stdout).toMatch(new RegExp(`^ {2}${name} +\\S`, 'm'));
      const run = await rivulet(t.url, ['subscriptions', name, '--help']);
      expect(run.code).toBe(0);
      expect(run.out[0]).toMatch(new RegExp(`^Usage: rivulet subscriptions ${name}\\b`));
      expect(run.stdout).toContain('--json');
    }
    const subscribe = await rivulet(t.url, ['subscribe', '--help']);
    expect(subscribe.code).toBe(0);
    expect(subscribe.out[0]).toMatch(/^Usage: rivulet subscribe SOURCE/);
    expect((await rivulet(t.url, ['--help'])).stdout).toMatch(/^ {2}subscriptions +\S/m);
  });

  it('an unknown or missing subcommand is a usage error', async () => {
    expect((await rivulet(t.url, ['subscriptions'])).code).toBe(2);
    const unknown = await rivulet(t.url, ['subscriptions', 'frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown subscriptions command "frobnicate"');
  });
});

describe('rivulet subscribe', () => {
  it('configures a copy, a webhook and an itx-call from flags', async () => {
    const copy = await rivulet(t.url, ['subscribe', '/sub/a', '--copy-to', '/sub/b', '--key', 'c', '--types', 'x,y', '--start', 'beginning']);
    expect(copy.code, copy.stderr).toBe(0);
    expect(copy.stdout).toMatch(/^subscribed c on \/sub\/a \(offset \d+\)$/);
    const hook = await rivulet(t.url, ['subscribe', '/sub/a', '--webhook', 'http://127.0.0.1:9/h', '--on-failing-event', 'skip', '--json']);
    expect(hook.code, hook.stderr).toBe(0);
    const answer = JSON.parse(hook.stdout) as { subscriptionKey: string; event: { offset: number } };
    expect(answer.subscriptionKey).toBe(`subscription:${answer.event.offset}`);
    const itx = await rivulet(t.url, ['subscribe', '/sub/a', '--itx-call', '["workers",["get","w"],"onEvents"]', '--key', 'i', '--transform', '{"payload": payload}']);
    expect(itx.code, itx.stderr).toBe(0);
    const byKey = (await client.state('/sub/a')).core!.subscriptions.outbound.byKey;
    expect(byKey.c!.configuration).toEqual({
      subscriptionKey: 'c',
      filter: { eventTypes: ['x', 'y'] },
      receiver: { action: 'copy-to-stream', receivingStreamPath: '/sub/b', delivery: { start: 'beginning', onFailingEvent: 'halt' } },
    });
    expect(byKey[answer.subscriptionKey]!.configuration.receiver).toEqual({ action: 'webhook-post', url: 'http://127.0.0.1:9/h', delivery: { start: 'now', onFailingEvent: 'skip' } });
    expect(byKey.i!.configuration.receiver).toMatchObject({ action: 'itx-call', expression: ['workers', ['get', 'w'], 'onEvents'], jsonataTransform: '{"payload": payload}' });
  });

  it('refuses flag mistakes with exit 2 and server refusals with exit 1', async () => {
    for (const [argv, message] of [
      [['subscribe', '/s'], 'give exactly one of --copy-to, --webhook, --itx-call'],
      [['subscribe', '/s', '--copy-to', '/r', '--webhook', 'http://x'], 'give exactly one of'],
      [['subscribe', '/s', '--copy-to', '/r', '--start', 'later'], '--start must be beginning or now'],
      [['subscribe', '/s', '--copy-to', '/r', '--on-failing-event', 'skip'], 'an ordered copy cannot skip'],
      [['subscribe', '/s', '--itx-call', 'workers.w'], '--itx-call must be a JSON array'],
    ] as const) {
      const run = await rivulet(t.url, [...argv]);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(message);
    }
    const self = await rivulet(t.url, ['subscribe', '/s', '--copy-to', '/s']);
    expect(self.code).toBe(1);
    expect(self.stderr).toBe('rivulet subscribe: INVALID_INPUT a stream cannot receive from itself (/s)');
  });
});

describe('rivulet subscriptions ls, show, resume, set-cursor, rm', () => {
  it('ls prints a table, halted first; --status filters; --json has every field', async () => {
    await haltedOn('/fix/h', 'k');
    expect((await rivulet(t.url, ['subscribe', '/fix/a', '--copy-to', '/fix/a-r', '--key', 'k'])).code).toBe(0);
    const run = await rivulet(t.url, ['subscriptions', 'ls', '--prefix', '/fix']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.out[0]).toMatch(/^STATUS +SOURCE +KEY +ACTION +TARGET +LAG +ATTEMPT +LAST ERROR$/);
    expect(run.out[1]).toMatch(/^halted +\/fix\/h +k +copy-to-stream +\/fix\/h-r +\d+ +2 +filter\.jsonataCondition threw/);
    expect(run.out[2]).toMatch(/^healthy +\/fix\/a +k +copy-to-stream/);
    const halted = await rivulet(t.url, ['subscriptions', 'ls', '--prefix', '/fix', '--status', 'halted', '--json']);
    const listed = JSON.parse(halted.stdout) as { subscriptions: Array<{ sourcePath: string; status: string }> };
    expect(listed.subscriptions.map((s) => [s.sourcePath, s.status])).toEqual([['/fix/h', 'halted']]);
    expect((await rivulet(t.url, ['subscriptions', 'ls', '--prefix', '/nothing'])).stderr).toBe('no subscriptions');
    for (const argv of [
      ['subscriptions', 'ls', '--limit', '0'],
      ['subscriptions', 'show', '/fix/h', 'k', '--attempts', '0'],
      ['subscriptions', 'preview', '/fix/h', '--file', '-', '--limit', '0'],
    ]) {
      const run = await rivulet(t.url, argv, { readStdin: async () => '{}' });
      expect(run.code, argv.join(' ')).toBe(2);
      expect(run.stderr).toMatch(/must be at least 1, got "0"/);
    }
    expect((await rivulet(t.url, ['subscriptions', 'ls', '--limit', '1', '--prefix', '/fix'])).out).toHaveLength(2);
    const bad = await rivulet(t.url, ['subscriptions', 'ls', '--status', 'stuck']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--status: "stuck" is not one of halted, retrying, lagging, healthy');
  });

  it('show prints configuration, progress, halt and attempts; an unknown key exits 1', async () => {
    await haltedOn('/show/h', 'k');
    const run = await rivulet(t.url, ['subscriptions', 'show', '/show/h', 'k']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('subscription  k on /show/h');
    expect(run.stdout).toMatch(/^halted +after offset \d+, 2 attempts: filter\.jsonataCondition threw/m);
    expect(run.stdout).toMatch(/^AT +RUN +ATTEMPT +OFFSETS +OUTCOME/m);
    expect(run.stdout.match(/ failed /g)).toHaveLength(2);
    const json = JSON.parse((await rivulet(t.url, ['subscriptions', 'show', '/show/h', 'k', '--json'])).stdout) as { entry: unknown; runtime: unknown; attempts: unknown[] };
    expect(json.attempts).toHaveLength(2);
    expect(json.entry).toEqual((await client.state('/show/h')).core!.subscriptions.outbound.byKey.k);
    const missing = await rivulet(t.url, ['subscriptions', 'show', '/show/h', 'nope']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('rivulet subscriptions show: NOT_FOUND no subscription "nope" on /show/h');
    expect((await rivulet(t.url, ['subscriptions', 'show', '/show/h'])).code).toBe(2);
  });

  it('resume, set-cursor (with and without --resume) and rm', async () => {
    await haltedOn('/mend/h', 'k');
    const resumed = await rivulet(t.url, ['subscriptions', 'resume', '/mend/h', 'k']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/^resumed k on \/mend\/h \(offset \d+\)$/);
    await until(async () => ((await client.state('/mend/h')).core?.subscriptions.outbound.byKey.k?.deliveryHalted ? true : undefined), 'the halt again');
    const again = await rivulet(t.url, ['subscriptions', 'set-cursor', '/mend/h', 'k', '1', '--resume']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe('cursor of k on /mend/h set after 1, resumed');
    expect((await rivulet(t.url, ['subscribe', '/mend/ok', '--copy-to', '/mend/ok-r', '--key', 'k'])).code).toBe(0);
    expect((await rivulet(t.url, ['subscriptions', 'resume', '/mend/ok', 'k'])).stdout).toBe('k on /mend/ok was not halted');
    expect((await rivulet(t.url, ['subscriptions', 'set-cursor', '/mend/ok', 'k', '0'])).stdout).toBe('cursor of k on /mend/ok set after 0');
    const beyond = await rivulet(t.url, ['subscriptions', 'set-cursor', '/mend/ok', 'k', '999']);
    expect(beyond.code).toBe(1);
    expect(beyond.stderr).toContain('INVALID_INPUT afterOffset 999 is beyond');
    expect((await rivulet(t.url, ['subscriptions', 'set-cursor', '/mend/ok', 'k', '-1'])).code).toBe(2);
    expect((await rivulet(t.url, ['subscriptions', 'set-cursor', '/mend/ok', 'k', 'x'])).stderr).toContain('OFFSET must be a non-negative whole number');
    const rm = await rivulet(t.url, ['subscriptions', 'rm', '/mend/ok', 'k']);
    expect(rm.code, rm.stderr).toBe(0);
    expect((await client.state('/mend/ok')).core!.subscriptions.outbound.byKey.k).toBeUndefined();
    const gone = await rivulet(t.url, ['subscriptions', 'rm', '/mend/ok', 'k']);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('NOT_FOUND');
  });
});

describe('rivulet subscriptions preview', () => {
  it('prints what would be delivered, from a file or standard input; appends nothing', async () => {
    await client.append('/pre/s', [{ type: 'a', payload: { n: 1 } }, { type: 'b' }]);
    const config = { filter: { eventTypes: ['a'] }, receiver: { action: 'webhook-post', url: 'http://127.0.0.1:9/h', jsonataTransform: '{"payload": {"m": payload.n}}', delivery: { start: 'now', onFailingEvent: 'halt' } } };
    const head = (await client.getEvents('/pre/s', { limit: 1 })).streamMaxOffset;
    const run = await rivulet(t.url, ['subscriptions', 'preview', '/pre/s', '--file', file('c.json', JSON.stringify(config))]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.out[0]).toBe('scanned 3, matched 1: 1 deliveries, 0 errors');
    expect(run.out[1]).toMatch(/^2\t\{"path":"\/pre\/s","offset":2,"createdAt":"[^"]+","type":"a","payload":\{"m":1\}\}$/);
    const stdin = await rivulet(t.url, ['subscriptions', 'preview', '/pre/s', '--file', '-', '--limit', '1', '--json'], { readStdin: async () => JSON.stringify(config) });
    expect(JSON.parse(stdin.stdout)).toMatchObject({ scanned: 1, matched: 0 });
    expect((await client.getEvents('/pre/s', { limit: 1 })).streamMaxOffset).toBe(head);
  });

  it('refuses a missing or bad file with exit 2 and a bad configuration with exit 1', async () => {
    expect((await rivulet(t.url, ['subscriptions', 'preview', '/pre/s'])).stderr).toContain('missing --file CONFIG.json');
    const notJson = await rivulet(t.url, ['subscriptions', 'preview', '/pre/s', '--file', file('bad.json', '{')]);
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toContain('is not valid JSON');
    const refused = await rivulet(t.url, ['subscriptions', 'preview', '/pre/s', '--file', file('self.json', JSON.stringify({ receiver: { action: 'copy-to-stream', receivingStreamPath: '/pre/s', delivery: { start: 'now', onFailingEvent: 'halt' } } }))]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe('rivulet subscriptions preview: INVALID_INPUT a stream cannot receive from itself (/pre/s)');
  });
});

describe('rivulet serve flags of the listing and the attempt history', () => {
  it('refuses --lagging-after-ms below 1 and --delivery-attempts-kept that is not a whole number', async () => {
    const lag = await rivulet(t.url, ['serve', '--port', '0', '--data', files, '--lagging-after-ms', '0']);
    expect(lag.code).toBe(2);
    expect(lag.stderr).toContain('--lagging-after-ms must be at least 1, got "0"');
    const kept = await rivulet(t.url, ['serve', '--port', '0', '--data', files, '--delivery-attempts-kept', 'many']);
    expect(kept.code).toBe(2);
    expect(kept.stderr).toContain('--delivery-attempts-kept must be a whole number, got "many"');
  });
});

