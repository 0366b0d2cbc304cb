#!/usr/bin/env node
/**
 * Makes packages/server/test/fixtures/format-4/: a data folder's database written by a real
 * server of storage format 4 (docs/operations.md "Upgrades"), and manifest.json, what that server
 * answered to every write (offsets, idempotency keys, subscriptions), so the upgrade test compares
 * against answers, not against numbers typed into the test.
 *
 *   node scripts/make-fixture-format4.mjs
 *
 * As scripts/make-fixture-format2.mjs does: the contract and server packages of FORMAT4_COMMIT (the
 * last commit whose server wrote format 4) are built by scripts/lib/build-old-tree.mjs, and that
 * build's startNodeServer runs on a fresh data folder while this script writes to it over HTTP.
 * Run it from the repository root.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildOldTree, root } from './lib/build-old-tree.mjs';

const FORMAT4_COMMIT = 'fdc48de';
const out = join(root, 'packages/server/test/fixtures/format-4');
const tree = mkdtempSync(join(tmpdir(), 'rivulet-format4-tree-'));
const data = mkdtempSync(join(tmpdir(), 'rivulet-format4-data-'));

try {
  buildOldTree(FORMAT4_COMMIT, ['contract', 'server'], tree);

  const { startNodeServer } = await import(pathToFileURL(join(tree, 'packages/server/dist/hosts/node/serve.js')).href);
  const server = await startNodeServer({ port: 0, data, logger: { error: () => undefined } });
  // appended: offsets of durable events per stream ("project/path" for a project's stream);
  // ephemeral: those of ephemeral ones (a later server may have pruned them); keys: every
  // idempotency key per stream with the offset its event was committed at.
  const manifest = { commit: FORMAT4_COMMIT, appended: {}, ephemeral: {}, keys: {}, subscriptions: [] };
  const call = async (method, path, body, project) => {
    const headers = { 'content-type': 'application/json', ...(project ? { 'x-project-id': project } : {}) };
    const res = await fetch(`${server.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = await res.json();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const append = async (path, events, project) => {
    const answer = await call('POST', `/v1/streams${path}`, events, project);
    const key = `${project ?? ''}${path}`;
    for (const e of answer.events) {
      ((e.ephemeral ? manifest.ephemeral : manifest.appended)[key] ??= []).push(e.offset);
      if (e.idempotencyKey !== undefined) (manifest.keys[key] ??= {})[e.idempotencyKey] = e.offset;
    }
    return answer;
  };

  // A copy subscription delivered to the end, and one whose filter matches nothing.
  await call('POST', '/v1/streams/shop/audit:subscribeToEventsFrom', { sourceStreamPath: '/shop/orders', subscriptionKey: 'audit' });
  manifest.subscriptions.push({ source: '/shop/orders', receiver: '/shop/audit', key: 'audit' });
  await call('POST', '/v1/streams/shop/refunds:subscribeToEventsFrom', {
    sourceStreamPath: '/shop/orders',
    subscriptionKey: 'refunds',
    filter: { eventTypes: ['order.refunded'] },
  });
  manifest.subscriptions.push({ source: '/shop/orders', receiver: '/shop/refunds', key: 'refunds' });
  for (let i = 0; i < 12; i++) {
    await append('/shop/orders', { type: 'order.placed', payload: { n: i, amount: 10 + i }, ...(i % 2 === 0 ? { idempotencyKey: `order-${i}` } : {}) });
  }
  await append('/shop/orders', [{ type: 'order.note', payload: { text: 'ü ✓' }, idempotencyKey: 'note-ü' }, { type: 'order.typing', ephemeral: true }]);
  // Keys of one name in two streams, a project's stream, a batch, and a destroyed stream.
  await append('/shop/payments', [{ type: 'paid', idempotencyKey: 'order-0' }, { type: 'paid', idempotencyKey: 'order-2' }]);
  await append('/ledger', Array.from({ length: 5 }, (_, n) => ({ type: 'entry', payload: { n }, idempotencyKey: `entry-${n}` })), 'acme');
  await append('/scratch', { type: 'tmp', idempotencyKey: 'gone' });
  await call('DELETE', '/v1/streams/scratch');
  delete manifest.appended['/scratch'];
  delete manifest.keys['/scratch'];
  const owed = manifest.appended['/shop/orders'].length; // ephemeral events are not copied
  for (let waited = 0; ; waited += 20) {
    const audit = await call('GET', '/v1/streams/shop/audit');
    if (audit.events.filter((e) => e.source?.copiedFrom).length >= owed) break;
    if (waited > 10_000) throw new Error('the copy subscription did not catch up');
    await new Promise((r) => setTimeout(r, 20));
  }
  await server.close();
  mkdirSync(out, { recursive: true });
  copyFileSync(join(data, 'rivulet.db'), join(out, 'rivulet.db'));
  writeFileSync(join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  process.stdout.write(`wrote ${join(out, 'rivulet.db')} and manifest.json\n`);
} finally {
  rmSync(tree, { recursive: true, force: true });
  rmSync(data, { recursive: true, force: true });
}
