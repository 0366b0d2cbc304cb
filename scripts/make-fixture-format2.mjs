#!/usr/bin/env node
/**
 * Makes packages/server/test/fixtures/format-2/: a data folder's database written by a real
 * server of storage format 2 (docs/operations.md "Upgrades"), and manifest.json, what that server
 * answered to every write, so the upgrade test compares against answers, not against numbers
 * typed into the test.
 *
 *   node scripts/make-fixture-format2.mjs
 *
 * How: the contract and server packages of FORMAT2_COMMIT (the last commit whose server wrote
 * format 2) are built in a temporary folder by scripts/lib/build-old-tree.mjs, and that build's
 * startNodeServer runs on a fresh data folder while this script writes to it over HTTP. The server is then closed (its WAL folds into
 * the file) and the file is copied here. Run it from the repository root, after `npm install`.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildOldTree, root } from './lib/build-old-tree.mjs';

const FORMAT2_COMMIT = '5c014f7';
const out = join(root, 'packages/server/test/fixtures/format-2');
const tree = mkdtempSync(join(tmpdir(), 'rivulet-format2-tree-'));
const data = mkdtempSync(join(tmpdir(), 'rivulet-format2-data-'));

try {
  buildOldTree(FORMAT2_COMMIT, ['contract', 'server'], tree);

  const { startNodeServer } = await import(pathToFileURL(join(tree, 'packages/server/dist/hosts/node.js')).href);
  const server = await startNodeServer({ port: 0, data, logger: { error: () => undefined } });
  // appended: the offsets of durable events per stream ("project/path" for a project's stream);
  // ephemeral: those of ephemeral ones, which a later server prunes once their retention is over.
  const manifest = { commit: FORMAT2_COMMIT, appended: {}, ephemeral: {}, subscriptions: [] };
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
    for (const e of answer.events) ((e.ephemeral ? manifest.ephemeral : manifest.appended)[key] ??= []).push(e.offset);
    return answer;
  };

  // A copy subscription, delivered to the end before the server stops.
  await call('POST', '/v1/streams/shop/audit:subscribeToEventsFrom', { sourceStreamPath: '/shop/orders', subscriptionKey: 'audit' });
  manifest.subscriptions.push({ source: '/shop/orders', receiver: '/shop/audit', key: 'audit' });
  for (let i = 0; i < 12; i++) {
    await append('/shop/orders', { type: 'order.placed', payload: { n: i, amount: 10 + i }, ...(i % 3 === 0 ? { idempotencyKey: `order-${i}` } : {}) });
  }
  await append('/shop/orders', [{ type: 'order.note', payload: { text: 'ü ✓' } }, { type: 'order.typing', ephemeral: true }]);
  // A project stream and a batch; a destroyed stream whose rows the server erases itself.
  await append('/ledger', Array.from({ length: 5 }, (_, n) => ({ type: 'entry', payload: { n } })), 'acme');
  await append('/scratch', { type: 'tmp' });
  await call('DELETE', '/v1/streams/scratch');
  delete manifest.appended['/scratch'];
  // Wait until the copy subscription has delivered everything durable it owes.
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
