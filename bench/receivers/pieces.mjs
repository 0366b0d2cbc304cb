#!/usr/bin/env node
/**
 * bench/receivers/pieces.mjs: CPU per item of two pieces of a webhook delivery, the old way and the
 * current way, in interleaved rounds in one process (bench/README.md, receivers, issue #18):
 *
 *   node bench/receivers/pieces.mjs [--items 20000] [--rounds 7]
 *
 * - the body: `JSON.stringify(webhookEnvelope(…))` (the construction before webhook-body.ts) against
 *   `webhookBody(…)`, for this benchmark's event and configure event as the append path stores them;
 * - the signature: HMAC-SHA256 with the raw key bytes against a KeyObject made once.
 * Runs against packages/server/dist (npm run build first). The first two rounds are warm-up.
 */
import { createHmac, createSecretKey, randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { items: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '7' } } });
const items = Number(values.items);
const rounds = Math.max(3, Number(values.rounds));
const dist = new URL('../../packages/server/dist/', import.meta.url);
const { webhookEnvelope } = await import(new URL('core/webhook-envelope.js', dist));
const { webhookBody } = await import(new URL('engine/receivers/webhook-body.js', dist));
const { rememberJson } = await import(new URL('engine/event-json.js', dist));
const { buildEvent } = await import(new URL('core/decide-append.js', dist));

/** An event as a read gives it back: parsed from its stored text, the text remembered. */
function stored(offset, input) {
  const json = JSON.stringify(buildEvent('/bench/hook', offset, '2026-12-02T04:00:00.000Z', input));
  const event = JSON.parse(json);
  rememberJson(event, json);
  return event;
}
const configured = stored(3001, {
  type: 'events.iterate.com/stream/subscription-configured',
  payload: { subscriptionKey: 'hook-0', receiver: { action: 'webhook-post', url: 'http://127.0.0.1:40000/hook/0', delivery: { start: 'beginning', onFailingEvent: 'halt' } } },
});
const event = stored(17, { type: 'bench/e', payload: { user: 'u-00042', text: 'the quick brown fox jumps over the lazy dog 0123456789', n: 17 } });
const shaped = { type: event.type, payload: event.payload };
const stamp = {
  projectId: 'default',
  path: '/bench/hook',
  streamId: 'sid',
  streamCreatedAt: '2026-12-02T04:00:00.000Z',
  subscriptionKey: 'hook-0',
  cursorChangedAtSourceOffset: 3001,
  deliveryId: 'delivery:["sid","hook-0",3001,17,17]',
  attempt: 1,
};
const body = JSON.stringify(webhookEnvelope(stamp, configured, event, shaped));
if (webhookBody(stamp, configured, event, shaped).body !== body) throw new Error('the two bodies differ');
const rawKey = randomBytes(32);
const keyObject = createSecretKey(rawKey);
const content = `${stamp.deliveryId}.1764650000.${body}`;

let sink = 0;
const pieces = {
  'body: stringify envelope': () => (sink += JSON.stringify(webhookEnvelope(stamp, configured, event, shaped)).length),
  'body: webhookBody': () => (sink += webhookBody(stamp, configured, event, shaped).body.length),
  'signature: raw key': () => (sink += createHmac('sha256', rawKey).update(content).digest('base64').length),
  'signature: KeyObject': () => (sink += createHmac('sha256', keyObject).update(content).digest('base64').length),
};
const perItem = {};
for (let round = 0; round < rounds; round++) {
  for (const [name, piece] of Object.entries(pieces)) {
    const before = process.cpuUsage();
    for (let i = 0; i < items; i++) piece();
    const used = process.cpuUsage(before);
    (perItem[name] ??= []).push((used.user + used.system) / items);
  }
}
console.log(`${items} items x ${rounds} rounds (the first two are warm-up); CPU µs per item`);
for (const [name, all] of Object.entries(perItem)) {
  const measured = all.slice(2).sort((a, b) => a - b);
  console.log(`  ${name.padEnd(26)} median ${measured[Math.floor(measured.length / 2)].toFixed(2)}  (${measured.map((x) => x.toFixed(2)).join(' ')})`);
}
if (sink === 0) throw new Error('nothing measured');
