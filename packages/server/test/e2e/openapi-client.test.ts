/**
 * End-to-end: a typed client generated from the served /v1/openapi.json (protocol §15.3) with
 * standard tools — openapi-typescript for the types, openapi-fetch for the calls — type-checks and
 * works against a real server on nested paths (openapi-fetch sends `{path}` as `shop%2Forders`,
 * protocol §2.4). A script with a mistake in a call must fail the type check, so the types are not
 * vacuous. Everything is generated at test time into a temporary folder.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

const NODE_MODULES = fileURLToPath(new URL('../../../../node_modules', import.meta.url));

/** The script a user of the generated client would write: append with a payload, read it back. */
const SCRIPT = `
import createClient from 'openapi-fetch';
import type { paths } from './schema.js';

const client = createClient<paths>({ baseUrl: process.argv[2] });
const path = { path: 'shop/orders/eu' };
const appended = await client.POST('/v1/streams/{path}', {
  params: { path },
  body: [{ type: 'shop.example/order-created', payload: { id: 7, lines: [{ sku: 'a-1', qty: 2 }] }, idempotencyKey: 'order-7' }],
});
if (appended.error !== undefined) throw new Error(appended.error.error.message);
const read = await client.GET('/v1/streams/{path}', { params: { path, query: { afterOffset: 1 } } });
if (read.error !== undefined) throw new Error(read.error.error.message);
const state = await client.GET('/v1/streams/{path}:state', { params: { path } });
if (state.error !== undefined) throw new Error(state.error.error.message);
const listed = await client.GET('/v1/streams', { params: { query: { prefix: '/shop' } } });
const refused = await client.POST('/v1/streams/{path}', { params: { path: { path: 'shop/../../x' } }, body: { type: 'x' } });
const payload: { [key: string]: unknown } | undefined = read.data.events[0]?.payload;
console.log(JSON.stringify({
  appended: appended.data.events.map((e) => [e.path, e.offset]),
  payload,
  streamMaxOffset: read.data.streamMaxOffset,
  state: state.response.status,
  listed: listed.data?.streams.map((s) => s.path),
  refused: refused.error?.error.code,
}));
`;

/** Mistakes the generated types must catch. */
const MISTAKES = `
import createClient from 'openapi-fetch';
import type { paths } from './schema.js';

const client = createClient<paths>({ baseUrl: 'http://127.0.0.1:1' });
await client.POST('/v1/streams/{path}', { params: { path: { path: 'a' } }, body: { type: 'x', payload: 'not an object' } });
await client.POST('/v1/streams/{path}', { params: { path: { path: 'a' } }, body: { payload: {} } });
await client.GET('/v1/streams/{path}', { params: { path: { path: 'a' }, query: { limit: 'ten' } } });
await client.GET('/v1/nowhere', {});
`;

const TSC = join(NODE_MODULES, 'typescript', 'bin', 'tsc');
/** A type check takes several seconds of CPU; on a busy machine many more. */
const TYPE_CHECK_MS = 120_000;

/**
 * Type errors of one file as "file:line message", from tsc in a child process (a type check takes
 * seconds: on this process's event loop it would stall the server under test).
 */
async function typeErrors(file: string): Promise<string[]> {
  const args = [TSC, '--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext'];
  args.push('--lib', 'es2022,dom', '--types', 'node', '--skipLibCheck', '--pretty', 'false', file);
  // Exit 0: checked and clean. Otherwise the errors, which must be type errors (not tsc failing to run).
  const run = await promisify(execFile)(process.execPath, args, { cwd: dir }).then(
    () => null,
    (error: { stdout?: string; stderr?: string }) => error,
  );
  if (run === null) return [];
  const errors = (run.stdout ?? '')
    .split('\n')
    .filter((line) => /^\S+\(\d+,\d+\): error/.test(line))
    .map((line) => line.replace(/^(?:.*\/)?([^/(]+)\((\d+),\d+\): error \w+: /, '$1:$2 '));
  if (errors.length === 0) throw new Error(`tsc failed without type errors: ${run.stdout ?? ''}${run.stderr ?? ''}`);
  return errors;
}

let server: TestServer;
let dir: string;

beforeAll(async () => {
  server = await startTestServer();
  dir = await mkdtemp(join(tmpdir(), 'rivulet-openapi-'));
  await symlink(NODE_MODULES, join(dir, 'node_modules'), 'dir');
  await writeFile(join(dir, 'package.json'), '{"type":"module"}\n');
  const doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as Parameters<typeof openapiTS>[0];
  await writeFile(join(dir, 'schema.d.ts'), astToString(await openapiTS(doc)));
});

afterAll(async () => {
  await server?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('a client generated from /v1/openapi.json', () => {
  it('type-checks a script that appends with a payload, and runs it on nested paths', async () => {
    const file = join(dir, 'script.ts');
    await writeFile(file, SCRIPT);
    expect(await typeErrors(file)).toEqual([]);
    const js = ts.transpileModule(SCRIPT, { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext } }).outputText;
    await writeFile(join(dir, 'script.mjs'), js);
    const { stdout } = await promisify(execFile)(process.execPath, [join(dir, 'script.mjs'), server.url], { cwd: dir });
    expect(JSON.parse(stdout)).toEqual({
      appended: [['/shop/orders/eu', 2]],
      payload: { id: 7, lines: [{ sku: 'a-1', qty: 2 }] },
      streamMaxOffset: 2,
      state: 200,
      listed: ['/shop/orders/eu'],
      refused: 'INVALID_INPUT',
    });
    // The server saw the same stream the SDK names with plain slashes.
    expect((await server.api.read('/shop/orders/eu')).events.map((e) => e.type)).toEqual([
      'events.iterate.com/stream/created',
      'shop.example/order-created',
    ]);
  }, TYPE_CHECK_MS);

  it('refuses, in the type check, a payload that is not an object, a missing type, a bad query and an unknown route', async () => {
    const file = join(dir, 'mistakes.ts');
    await writeFile(file, MISTAKES);
    const lines = (await typeErrors(file)).map((e) => e.split(' ')[0]);
    expect(lines).toEqual(['mistakes.ts:6', 'mistakes.ts:7', 'mistakes.ts:8', 'mistakes.ts:9']);
  }, TYPE_CHECK_MS);

  it('names every operation with a unique operationId', async () => {
    const doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, { operationId?: string }>> };
    const ids = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((op) => op.operationId));
    expect(ids.every((id) => typeof id === 'string' && /^[A-Za-z][A-Za-z0-9]*$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining(['appendEvents', 'readEvents', 'destroyStream', 'getStreamState', 'listStreams', 'subscribeToEventsFrom', 'waitForEvent']));
    expect(JSON.stringify(doc)).not.toContain('$defs');
  });
});
