/**
 * The examples/order-totals demo runs against a real server (as its README says), twice: the
 * second run appends nothing new and the hosted processor resumes from its stored checkpoint, so
 * the totals are the same.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createClient } from '@rivulet/client';
import { runOrderTotalsDemo } from '../../../examples/order-totals/src/demo.js';
import { startTestServer, type TestServer } from './harness.js';

let t: TestServer;
let dir: string;

beforeEach(async () => {
  t = await startTestServer({ retryBaseMs: 10, retryMaxMs: 50, processorIdleMs: 60_000 });
  dir = mkdtempSync(join(tmpdir(), 'rivulet-order-totals-'));
});

afterEach(async () => {
  await t.dispose();
  rmSync(dir, { recursive: true, force: true });
});

it('keeps per-customer totals, announces a VIP once, and gives the same answer when run again', async () => {
  const dbPath = join(dir, 'state.db');
  const lines: string[] = [];
  const first = await runOrderTotalsDemo({ url: t.url, dbPath, log: (line) => lines.push(line) });
  expect(first.totals).toEqual({ customers: { ada: { orders: 2, totalCents: 1_800 }, grace: { orders: 2, totalCents: 101_500 } } });
  expect(first.vip).toEqual(['grace']);
  expect(lines.join('\n')).toContain('grace');

  const second = await runOrderTotalsDemo({ url: t.url, dbPath });
  expect(second.totals).toEqual(first.totals);
  expect(second.checkpoint).toBe(first.checkpoint);
  expect(second.vip).toEqual(['grace']);
  const orders = await createClient({ url: t.url }).getEvents('/shop/orders');
  expect(orders.events.map((e) => e.offset)).toEqual([1, 2, 3, 4, 5, 6, 7]);
});
