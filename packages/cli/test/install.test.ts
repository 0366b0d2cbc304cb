/**
 * The packages as a user gets them: `npm pack` of @rivulet/contract, @rivulet/client,
 * @rivulet/server and rivulet, installed from the tarballs into a fresh project outside the
 * workspace (third-party dependencies from the registry, better-sqlite3 built as on any machine),
 * then the installed CLI's server started from there and an SDK script run against it: append,
 * subscribe (a copy), tail, and a webhook verified with the installed SDK and the secret the
 * installed CLI prints. Slow (the native build of better-sqlite3), so it runs once per suite.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PACKAGES = ['contract', 'client', 'server', 'cli'];

let work: string;
let project: string;
let tarballs: Record<string, string>;
let server: ChildProcess | undefined;
let url: string;
let data: string;

/**
 * npm with the caller's environment, minus the workspace's own npm settings — but the headers to
 * build native modules against stay (CI's run on another Node sets them; .ci/run).
 */
function npm(args: string[], cwd: string, timeout = 600_000) {
  const keep = (k: string) => k === 'npm_config_nodedir' || (!k.startsWith('npm_') && !k.startsWith('RIVULET_'));
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => keep(k)));
  return run('npm', args, { cwd, env, timeout, maxBuffer: 32 * 1024 * 1024 });
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'rivulet-install-'));
  const packed = join(work, 'packed');
  mkdirSync(packed, { recursive: true });
  await npm(['pack', '--silent', '--pack-destination', packed, ...PACKAGES.flatMap((p) => ['--workspace', `packages/${p}`])], ROOT);
  tarballs = {};
  for (const file of readdirSync(packed)) {
    const name = file.startsWith('rivulet-server-') ? '@rivulet/server' : file.startsWith('rivulet-client-') ? '@rivulet/client' : file.startsWith('rivulet-contract-') ? '@rivulet/contract' : 'rivulet';
    tarballs[name] = join(packed, file);
  }
  project = join(work, 'app');
  data = join(work, 'data');
  const deps = Object.fromEntries(Object.entries(tarballs).map(([name, file]) => [name, `file:${file}`]));
  mkdirSync(project, { recursive: true });
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'rivulet-install-check', private: true, type: 'module', dependencies: deps, overrides: deps, allowScripts: { 'better-sqlite3': true } }, null, 2),
  );
  await npm(['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel', 'error'], project);

  server = spawn(process.execPath, [join(project, 'node_modules/rivulet/bin/rivulet.js'), 'serve', '--port', '0', '--data', data], {
    cwd: project,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('RIVULET_'))),
  });
  url = await new Promise<string>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`the installed server did not start:\n${output}`)), 30_000);
    const onData = (s: string) => {
      output += s;
      const match = /rivulet listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    // Decoded as a stream: a character whose UTF-8 bytes a pipe splits between two chunks stays whole.
    server!.stdout!.setEncoding('utf8');
    server!.stderr!.setEncoding('utf8');
    server!.stdout!.on('data', onData);
    server!.stderr!.on('data', onData);
    server!.once('exit', (code) => reject(new Error(`the installed server exited (${code}):\n${output}`)));
  });
}, 900_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((resolve) => server!.once('exit', resolve));
  }
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('installed from packed tarballs', () => {
  it('every tarball carries its README, LICENSE and built files, and no tests or sources', async () => {
    for (const [name, file] of Object.entries(tarballs)) {
      const { stdout } = await run('tar', ['-tzf', file]);
      const entries = stdout.split('\n').filter(Boolean);
      expect(entries, name).toContain('package/README.md');
      expect(entries, name).toContain('package/LICENSE');
      expect(entries, name).toContain('package/package.json');
      expect(entries.filter((e) => /\.test\.|\/src\/.*\.ts$|\/test\//.test(e)), name).toEqual([]);
    }
    const { stdout } = await run('tar', ['-tzf', tarballs['@rivulet/server']!]);
    expect(stdout).toContain('package/dist/hosts/node/serve.js');
    expect(stdout).toContain('package/dist/release.js');
    expect(stdout).toContain('package/dist/ui/index.html');
  });

  it('the installed CLI prints its version through the server package\'s release entry', async () => {
    const { stdout } = await run(process.execPath, [join(project, 'node_modules/rivulet/bin/rivulet.js'), '--version'], { cwd: project });
    expect(stdout).toMatch(/^rivulet \d+\.\d+\.\d+ \(storage format \d+\)\n$/);
  });

  it('the installed CLI serves the web UI, and an SDK script appends, subscribes, tails and verifies a webhook', async () => {
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<html');

    const { stdout: secretOut } = await run(process.execPath, [join(project, 'node_modules/rivulet/bin/rivulet.js'), 'webhook-secret', '--data', data], { cwd: project });
    const secret = secretOut.trim();
    expect(secret).toMatch(/^whsec_/);

    writeFileSync(
      join(project, 'check.mjs'),
      `
import { createServer } from 'node:http';
import { createClient, verifyWebhook } from '@rivulet/client';

const [url, secret] = process.argv.slice(2);
const rivulet = createClient({ url });
let delivered;
const received = new Promise((resolve, reject) => (delivered = { resolve, reject }));
const hooks = createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const request = new Request('http://hook' + req.url, { method: 'POST', headers: req.headers, body: Buffer.concat(chunks) });
  try {
    const envelope = await verifyWebhook(request, secret);
    res.end('ok');
    delivered.resolve(envelope);
  } catch (error) {
    res.statusCode = 401;
    res.end();
    delivered.reject(error);
  }
});
await new Promise((resolve) => hooks.listen(0, '127.0.0.1', resolve));
await rivulet.append('/shop/orders', {
  type: 'events.iterate.com/stream/subscription-configured',
  payload: {
    subscriptionKey: 'hook',
    filter: { eventTypes: ['shop.example/order-paid'] },
    receiver: { action: 'webhook-post', url: 'http://127.0.0.1:' + hooks.address().port + '/hook', delivery: { start: 'now', onFailingEvent: 'halt' } },
  },
});
await rivulet.append('/shop/orders', { type: 'shop.example/order-paid', payload: { id: 7 }, idempotencyKey: 'paid-7' });
await rivulet.subscribeToEventsFrom('/shop/paid', {
  sourceStreamPath: '/shop/orders',
  subscriptionKey: 'paid',
  filter: { eventTypes: ['shop.example/order-paid'] },
  delivery: { start: 'beginning' },
});
let copied;
for await (const event of rivulet.tail('/shop/paid')) {
  if (event.type === 'shop.example/order-paid') {
    copied = event;
    break;
  }
}
const envelope = await received;
hooks.close();
console.log(JSON.stringify({ copied: copied.payload, webhook: { type: envelope.event.type, payload: envelope.event.payload } }));
process.exit(0);
`,
    );
    const { stdout } = await run(process.execPath, ['check.mjs', url, secret], { cwd: project, timeout: 30_000 });
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({
      copied: { id: 7 },
      webhook: { type: 'shop.example/order-paid', payload: { id: 7 } },
    });
  });
});
