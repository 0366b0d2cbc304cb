/**
 * The copy backlog drain's two steps, shared by copy-drain-ab.mjs and copy-drain-profile.mjs: a
 * backlog of events appended to /bench/src in batches of 1000, and a copy subscription into
 * /bench/dst from the beginning, waited for until its lag is 0.
 */
import { performance } from 'node:perf_hooks';
import { call } from '../lib/report.mjs';
import { eventBody } from './load.mjs';

/**
 * Appends `count` benchmark events to /bench/src on the server at `url`, 1000 per request. With
 * `pad` the events carry a second text member of that many characters (larger events than run.mjs
 * measures, for what a batch's size does to the drain).
 */
export async function preloadBacklog(url, count, pad = 0) {
  const extra = pad > 0 ? `,"pad":"${'x'.repeat(pad)}"}` : '';
  const event = (seq) => {
    const text = eventBody(0, seq, false).toString();
    return extra === '' ? text : `${text.slice(0, -2)}${extra}}`;
  };
  for (let done = 0; done < count; ) {
    const n = Math.min(1000, count - done);
    const body = `[${Array.from({ length: n }, (_, i) => event(done + i)).join(',')}]`;
    const response = await fetch(`${url}/v1/streams/bench/src`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    if (!response.ok) throw new Error(`preload answered ${response.status}`);
    await response.arrayBuffer();
    done += n;
  }
}

/**
 * Subscribes /bench/dst to /bench/src from the beginning and resolves once the subscription's lag
 * is 0, with the seconds it took; throws after `timeoutMs`, naming `name`.
 */
export async function drainBacklog(url, name, timeoutMs = 300_000) {
  const t0 = performance.now();
  await call(url, 'POST', '/v1/streams/bench/dst:subscribeToEventsFrom', { sourceStreamPath: '/bench/src', subscriptionKey: 'drain', delivery: { start: 'beginning' } });
  for (;;) {
    const { runtime } = await call(url, 'GET', '/v1/streams/bench/src:state');
    const sub = Object.values(runtime?.subscriptions ?? {})[0];
    if (sub && sub.lag === 0) return (performance.now() - t0) / 1000;
    if (performance.now() - t0 > timeoutMs) throw new Error(`${name}: copies still ${sub?.lag} behind after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
