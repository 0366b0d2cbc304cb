import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rivulet, useServerAndFiles } from './harness.js';

const t = useServerAndFiles('rivulet-cli-files-');

const EVENT_LINE = /^(\d+) {2}(\S+) {2}(\S+) {2}(.*)$/;

/** [offset, type, the rest] of a human event line (the time is checked separately). */
function fields(line: string | undefined): string[] {
  const match = EVENT_LINE.exec(line ?? '');
  if (!match) throw new Error(`not an event line: ${line}`);
  return [match[1]!, match[3]!, match[4]!];
}

describe('rivulet append', () => {
  it('appends one event with every option and prints its line', async () => {
    const run = await rivulet(t.url, [
      'append',
      'shop/orders',
      'order-created',
      '--payload',
      '{"id":7}',
      '--metadata',
      '{"by":"ci"}',
      '--idempotency-key',
      'o7',
      '--ephemeral',
    ]);
    expect(run.code).toBe(0);
    expect(run.out).toHaveLength(1);
    expect(fields(run.out[0])).toEqual(['2', 'order-created', '{"id":7}  metadata={"by":"ci"}  key="o7"  (ephemeral)']);
    expect(Number.isNaN(Date.parse(EVENT_LINE.exec(run.out[0]!)![2]!))).toBe(false);
    const read = await t.client.getEvents('/shop/orders', { includeEphemeral: true });
    expect(read.events[1]).toMatchObject({ type: 'order-created', payload: { id: 7 }, metadata: { by: 'ci' }, idempotencyKey: 'o7', ephemeral: true });
  });

  it('prints the committed events as one JSON document with --json', async () => {
    const run = await rivulet(t.url, ['append', '/j', 't', '--json']);
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout) as { events: { offset: number; type: string; path: string }[] };
    expect(doc.events).toMatchObject([{ offset: 2, type: 't', path: '/j' }]);
  });

  it('appends a file: an array atomically, an object as one event', async () => {
    const batch = t.file('batch.json', JSON.stringify([{ type: 'a', payload: { n: 1 } }, { type: 'b' }]));
    const run = await rivulet(t.url, ['append', '/f', '--file', batch]);
    expect(run.code).toBe(0);
    expect(run.out.map(fields)).toEqual([
      ['2', 'a', '{"n":1}'],
      ['3', 'b', '{}'],
    ]);
    const single = t.file('one.json', '{"type":"c"}');
    expect((await rivulet(t.url, ['append', '/f', '--file', single])).code).toBe(0);
    expect((await t.client.getEvents('/f')).events.map((e) => e.type).slice(1)).toEqual(['a', 'b', 'c']);
  });

  it('reads the file from standard input with "-"', async () => {
    const run = await rivulet(t.url, ['append', '/stdin', '--file', '-', '--json'], {
      readStdin: async () => '[{"type":"x"},{"type":"y"}]',
    });
    expect(run.code).toBe(0);
    expect((JSON.parse(run.stdout) as { events: { type: string }[] }).events.map((e) => e.type)).toEqual(['x', 'y']);
  });

  it('commits nothing of a batch with one bad event, and says why (exit 1)', async () => {
    const bad = t.file('bad-batch.json', JSON.stringify([{ type: 'a' }, { type: 'b', colour: 'red' }]));
    const run = await rivulet(t.url, ['append', '/atomic', '--file', bad]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^rivulet append: INVALID_INPUT .*colour/);
    expect(run.stdout).toBe('');
    expect(await t.client.getEvents('/atomic')).toMatchObject({ streamId: null, events: [] });
  });

  it('reports server error codes on stderr with exit 1', async () => {
    const forbidden = await rivulet(t.url, ['append', '/x', 'events.iterate.com/stream/created']);
    expect(forbidden.code).toBe(1);
    expect(forbidden.stderr).toMatch(/^rivulet append: FORBIDDEN .*platform/);

    expect((await rivulet(t.url, ['append', '/x', 't', '--idempotency-key', 'k', '--payload', '{"n":1}'])).code).toBe(0);
    const conflict = await rivulet(t.url, ['append', '/x', 't', '--idempotency-key', 'k', '--payload', '{"n":2}']);
    expect(conflict.code).toBe(1);
    expect(conflict.stderr).toMatch(/^rivulet append: CONFLICT .*idempotency key "k" already names a different event/);

    const badPath = await rivulet(t.url, ['append', '/a//b', 't']);
    expect(badPath.code).toBe(1);
    expect(badPath.stderr).toBe('rivulet append: INVALID_INPUT stream path "/a//b" has an empty segment');
  });

  it('reports an unreachable server as UNAVAILABLE', async () => {
    const url = t.url;
    await t.stop();
    const run = await rivulet(url, ['append', '/x', 't']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`^rivulet append: UNAVAILABLE cannot reach ${url}/v1/streams/x`));
  });

  describe('usage errors (exit 2, with the usage text)', () => {
    const cases: [string, string[], string][] = [
      ['bad --payload JSON', ['/x', 't', '--payload', '{bad'], '--payload is not valid JSON'],
      ['a --payload that is not an object', ['/x', 't', '--payload', '[1]'], '--payload must be a JSON object'],
      ['bad --metadata JSON', ['/x', 't', '--metadata', 'nope'], '--metadata is not valid JSON'],
      ['no PATH', [], 'missing PATH'],
      ['no TYPE', ['/x'], 'missing TYPE (or --file)'],
      ['an extra argument', ['/x', 't', 'extra'], 'unexpected argument "extra"'],
      ['TYPE and --file', ['/x', 't', '--file', 'f.json'], 'give either TYPE or --file, not both'],
      ['--payload with --file', ['/x', '--file', 'f.json', '--payload', '{}'], '--payload does not combine with --file'],
      ['an unknown flag', ['/x', 't', '--bogus'], "Unknown option '--bogus'"],
      ['a flag without its value', ['/x', 't', '--payload'], "Option '--payload <value>' argument missing"],
      ['a bad --url', ['/x', 't', '--url', 'not a url'], '--url: server URL "not a url" is not a valid URL'],
    ];
    for (const [name, args, message] of cases) {
      it(name, async () => {
        const run = await rivulet(t.url, ['append', ...args]);
        expect(run.code).toBe(2);
        expect(run.err[0]).toContain(`rivulet append: ${message}`);
        expect(run.stderr).toContain('Usage: rivulet append PATH TYPE');
        expect(run.stdout).toBe('');
      });
    }

    it('a file that does not exist, is not JSON, or holds no event objects', async () => {
      const missing = await rivulet(t.url, ['append', '/x', '--file', join(t.files, 'missing.json')]);
      expect([missing.code, missing.err[0]]).toEqual([2, expect.stringContaining('rivulet append: cannot read')]);
      const notJson = await rivulet(t.url, ['append', '/x', '--file', t.file('not.json', '[{"type": "a"},\n')]);
      expect([notJson.code, notJson.err[0]]).toEqual([2, expect.stringMatching(/not\.json is not valid JSON/)]);
      const brokenEvent = await rivulet(t.url, ['append', '/x', '--file', t.file('broken.json', '{\n  "type": \n}\n')]);
      expect([brokenEvent.code, brokenEvent.err[0]]).toEqual([2, expect.stringMatching(/broken\.json is not valid JSON/)]);
      const emptyStdin = await rivulet(t.url, ['append', '/x', '--file', '-'], { readStdin: async () => '\n \n' });
      expect([emptyStdin.code, emptyStdin.err[0]]).toEqual([2, 'rivulet append: standard input holds no events']);
      const numbers = await rivulet(t.url, ['append', '/x', '--file', t.file('numbers.json', '[1,2]')]);
      expect([numbers.code, numbers.err[0]]).toEqual([
        2,
        'rivulet append: --file must hold one event object or an array of event objects',
      ]);
      expect((await t.client.list()).streams).toEqual([]);
    });
  });
});
