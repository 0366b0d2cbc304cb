import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type RivuletClient } from '@rivulet/client';
import { clientFrom } from '../src/commands/remote.js';
import { Capture, rivulet, startTestServer, type TestServer } from './harness.js';

let t: TestServer;
let client: RivuletClient;

beforeEach(async () => {
  t = await startTestServer();
  client = createClient({ url: t.url });
});
afterEach(() => t.dispose());

describe('rivulet --help', () => {
  it('lists every command and the connection variables', async () => {
    const run = await rivulet(t.url, ['--help']);
    expect(run.code).toBe(0);
    for (const name of ['serve', 'append', 'read', 'tail', 'state', 'ls', 'destroy', 'export', 'import']) {
      expect(run.stdout).toMatch(new RegExp(`^ {2}${name} +\\S`, 'm'));
    }
    expect(run.stdout).toContain('RIVULET_URL (default http://127.0.0.1:7420)');
  });

  for (const name of ['append', 'read', 'tail', 'state', 'ls', 'destroy', 'export', 'import']) {
    it(`rivulet ${name} --help prints its usage with the connection options`, async () => {
      const run = await rivulet(t.url, [name, '--help']);
      expect(run.code).toBe(0);
      expect(run.out[0]).toMatch(new RegExp(`^Usage: rivulet ${name}\\b`));
      for (const flag of ['--url URL', '--token TOKEN', '--project ID', '--json', '--help']) expect(run.stdout).toContain(flag);
    });
  }
});

describe('rivulet state', () => {
  it('summarises a stream for people and prints the server document with --json', async () => {
    await client.append('/s', [{ type: 'a' }, { type: 'b', ephemeral: true }]);
    const run = await rivulet(t.url, ['state', 's']);
    expect(run.code).toBe(0);
    const streamId = (await client.state('/s')).core!.streamId;
    expect(run.out).toEqual([
      'path           /s',
      'project        (deployment-wide)',
      `stream id      ${streamId}`,
      expect.stringMatching(/^created {8}\S+Z$/),
      'head offset    3',
      'durable events 2 (last at offset 2)',
      'paused         no',
      'subscriptions  none',
      'inbound        none',
      'connections    none',
    ]);
    const json = await rivulet(t.url, ['state', '/s', '--json']);
    expect(JSON.parse(json.stdout)).toEqual(await client.state('/s'));
  });

  it('says when a stream does not exist', async () => {
    expect((await rivulet(t.url, ['state', '/none'])).stdout).toBe('stream /none does not exist');
    expect(JSON.parse((await rivulet(t.url, ['state', '/none', '--json'])).stdout)).toEqual({ core: null, runtime: null });
  });

  it('needs exactly one PATH (exit 2) and reports a bad one (exit 1)', async () => {
    const missing = await rivulet(t.url, ['state']);
    expect([missing.code, missing.err[0]]).toEqual([2, 'rivulet state: missing PATH']);
    const bad = await rivulet(t.url, ['state', '/a/../..']);
    expect([bad.code, bad.stderr]).toEqual([1, 'rivulet state: INVALID_INPUT stream path "/a/../.." uses ".." to escape the root']);
  });
});

describe('rivulet ls', () => {
  it('prints a table of every stream below a prefix', async () => {
    for (const path of ['/shop/orders', '/shop/orders/7', '/shopping', '/other']) await client.append(path, { type: 't' });
    const run = await rivulet(t.url, ['ls', '--prefix', 'shop']);
    expect(run.code).toBe(0);
    expect(run.out[0]).toMatch(/^PATH {12}HEAD {2}CREATED {19}STREAM ID$/);
    expect(run.out.slice(1).map((l) => l.split(/\s+/).slice(0, 2))).toEqual([
      ['/shop/orders', '2'],
      ['/shop/orders/7', '2'],
    ]);
    const all = JSON.parse((await rivulet(t.url, ['ls', '--json'])).stdout) as { streams: { path: string }[] };
    expect(all.streams.map((s) => s.path)).toEqual(['/other', '/shop/orders', '/shop/orders/7', '/shopping']);
  });

  it('says when there is nothing to list', async () => {
    const run = await rivulet(t.url, ['ls']);
    expect([run.code, run.stdout, run.stderr]).toEqual([0, '', 'no streams']);
    expect(JSON.parse((await rivulet(t.url, ['ls', '--json'])).stdout)).toEqual({ streams: [] });
  });

  it('takes no positional argument (exit 2) and reports a bad prefix (exit 1)', async () => {
    const extra = await rivulet(t.url, ['ls', '/shop']);
    expect([extra.code, extra.err[0]]).toEqual([2, 'rivulet ls: unexpected argument "/shop"']);
    const bad = await rivulet(t.url, ['ls', '--prefix', '/a?b']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^rivulet ls: INVALID_INPUT stream path "\/a\?b" contains a character/);
  });
});

describe('rivulet destroy', () => {
  it('refuses without --yes and erases nothing', async () => {
    await client.append('/d', { type: 't' });
    const run = await rivulet(t.url, ['destroy', '/d']);
    expect(run.code).toBe(2);
    expect(run.err[0]).toBe('rivulet destroy: refusing to destroy /d without --yes (it erases every event)');
    expect((await client.getEvents('/d')).streamMaxOffset).toBe(2);
  });

  it('erases the stream with --yes', async () => {
    await client.append('/d', { type: 't' });
    const run = await rivulet(t.url, ['destroy', 'd', '--yes']);
    expect([run.code, run.stdout]).toEqual([0, 'destroyed d']);
    expect((await client.getEvents('/d')).streamId).toBeNull();
    await client.append('/d', { type: 't' });
    expect(JSON.parse((await rivulet(t.url, ['destroy', '/d', '--yes', '--json'])).stdout)).toEqual({ destroyed: true });
  });
});

describe('connection flags and environment', () => {
  const admin = 'admin-token-0123456789';
  const projectA = 'project-a-token-0123456789';

  beforeEach(async () => {
    await t.dispose();
    t = await startTestServer({
      tokens: new Map([
        [admin, '*'],
        [projectA, 'proj-a'],
      ]),
    });
  });

  it('needs a token when the server has tokens', async () => {
    const run = await rivulet(t.url, ['ls']);
    expect([run.code, run.stderr]).toEqual([1, 'rivulet ls: UNAUTHENTICATED missing token: send Authorization: Bearer <token>']);
  });

  it('takes the URL, token and project from the environment, flags winning', async () => {
    const env = { RIVULET_URL: t.url, RIVULET_TOKEN: admin, RIVULET_PROJECT: 'proj-a' };
    const append = await new Capture(env).run(['append', '/e', 't', '--json']);
    expect(append.code).toBe(0);
    const asProject = createClient({ url: t.url, token: projectA });
    expect((await asProject.getEvents('/e')).streamMaxOffset).toBe(2);

    const flags = await new Capture({ RIVULET_URL: 'http://127.0.0.1:9', RIVULET_TOKEN: 'wrong' }).run([
      'state',
      '/e',
      '--json',
      '--url',
      t.url,
      '--token',
      admin,
      '--project',
      'proj-a',
    ]);
    expect(flags.code).toBe(0);
    expect(JSON.parse(flags.stdout).core.projectId).toBe('proj-a');

    const unknown = await new Capture({ RIVULET_URL: t.url, RIVULET_TOKEN: 'wrong' }).run(['ls']);
    expect([unknown.code, unknown.stderr]).toEqual([1, 'rivulet ls: UNAUTHENTICATED unknown token']);

    const crossing = await new Capture({ RIVULET_URL: t.url }).run(['ls', '--token', projectA, '--project', 'proj-b']);
    expect(crossing.code).toBe(1);
    expect(crossing.stderr).toMatch(/^rivulet ls: FORBIDDEN /);

    const badProject = await new Capture({ RIVULET_URL: t.url }).run(['ls', '--token', admin, '--project', 'Not Valid']);
    expect(badProject.stderr).toMatch(/^rivulet ls: INVALID_INPUT X-Project-Id must be/);
  });

  it('falls back to http://127.0.0.1:7420 when neither --url nor a non-empty RIVULET_URL is given', () => {
    expect(clientFrom({}, {}).url).toBe('http://127.0.0.1:7420');
    expect(clientFrom({}, { RIVULET_URL: '' }).url).toBe('http://127.0.0.1:7420');
    expect(clientFrom({ url: 'http://h:1' }, { RIVULET_URL: 'http://env:2' }).url).toBe('http://h:1');
  });
});
