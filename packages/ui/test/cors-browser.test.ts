/**
 * CORS as a browser sees it (protocol §1.4): Chromium on a page of one origin calls a Rivulet server
 * on another port. From the allowed origin the preflighted append (Authorization, a JSON body) and
 * the read work, and the page may read the exposed ETag; from another origin the browser refuses
 * the call, since the server's answers carry no CORS field for it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNodeServer, type RunningServer } from '@rivulet/server/node';

const CHROMIUM = process.env.RIVULET_CHROMIUM ?? '/usr/bin/chromium';
const TOKEN = 'browser-cors-token-0123';

/** A page server on its own port: its origin is the page's origin. */
async function pageServer(): Promise<{ server: Server; origin: string }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>page</title><p>page</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

let allowedPage: { server: Server; origin: string };
let otherPage: { server: Server; origin: string };
let rivulet: RunningServer;
let context: BrowserContext;
const data = mkdtempSync(join(tmpdir(), 'rivulet-cors-browser-'));
const profile = mkdtempSync(join(tmpdir(), 'rivulet-cors-chromium-'));

beforeAll(async () => {
  allowedPage = await pageServer();
  otherPage = await pageServer();
  rivulet = await startNodeServer({
    port: 0,
    data,
    tokens: new Map([[TOKEN, '*']]),
    cors: { origins: [allowedPage.origin] },
    logger: { error: () => undefined },
  });
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
  context.setDefaultTimeout(10_000);
});

afterAll(async () => {
  await context?.close();
  await rivulet?.close();
  for (const page of [allowedPage, otherPage]) page?.server.close();
  rmSync(data, { recursive: true, force: true });
  rmSync(profile, { recursive: true, force: true });
});

/** What the page's own script sees: an append with a payload, then a read of a full page. */
async function appendAndRead(origin: string): Promise<unknown> {
  const page = await context.newPage();
  try {
    await page.goto(`${origin}/`);
    return await page.evaluate(
      async ({ base, token }) => {
        try {
          const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
          const appended = await fetch(`${base}/v1/streams/browser%2Forders`, {
            method: 'POST',
            headers,
            body: JSON.stringify([{ type: 'order', payload: { id: 1 } }, { type: 'order', payload: { id: 2 } }]),
          });
          const read = await fetch(`${base}/v1/streams/browser/orders?limit=2`, { headers: { authorization: `Bearer ${token}` } });
          const body = (await read.json()) as { events: { offset: number; payload?: unknown }[] };
          return { appended: appended.status, read: read.status, etag: read.headers.get('etag'), offsets: body.events.map((e) => e.offset) };
        } catch (error) {
          return { failed: String(error) };
        }
      },
      { base: rivulet.url, token: TOKEN },
    );
  } finally {
    await page.close();
  }
}

describe('a page on another origin', () => {
  it('from the allowed origin: the preflighted append and the read work, and the ETag is readable', async () => {
    const seen = await appendAndRead(allowedPage.origin);
    expect(seen).toEqual({ appended: 200, read: 200, etag: expect.stringMatching(/^W\/"/), offsets: [1, 2] });
    const stored = await fetch(`${rivulet.url}/v1/streams/browser/orders`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(((await stored.json()) as { events: unknown[] }).events).toHaveLength(3);
  });

  it('from another origin: the browser refuses, and nothing is appended', async () => {
    const before = await fetch(`${rivulet.url}/v1/streams/browser/orders`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const head = ((await before.json()) as { streamMaxOffset: number }).streamMaxOffset;
    expect(await appendAndRead(otherPage.origin)).toEqual({ failed: 'TypeError: Failed to fetch' });
    const after = await fetch(`${rivulet.url}/v1/streams/browser/orders`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(((await after.json()) as { streamMaxOffset: number }).streamMaxOffset).toBe(head);
  });
});
