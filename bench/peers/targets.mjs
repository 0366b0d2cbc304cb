/**
 * The target lines of bench/peers: issue 19's targets judged on the medians of a run, each as
 * [target, value as printed, PASS/MISS/SKIP/INFO]. No I/O here; a figure not measured (a group not
 * run, a peer skipped) makes its target SKIP, never PASS (verdict.mjs).
 */
import { fmtMs, fmtN, fmtX } from '../lib/report.mjs';
import { cost, ratio, verdict } from './verdict.mjs';

const pct = (n) => (Number.isFinite(n) ? `${(n * 100).toFixed(1)} %` : '-');
const mb = (n) => (Number.isFinite(n) ? `${n.toFixed(1)} MB` : '-');
const pctOfCore = (n) => (Number.isFinite(n) ? `${n.toFixed(2)} %` : '-');

/**
 * @param {(name: string, field: string) => number} s the median of a contender's field (NaN if none)
 * @param {{abCli?: boolean, groups: string[]}} opts
 */
export function targetLines(s, { abCli = false, groups }) {
  const lines = [];
  const on = (group) => groups.includes(group);
  if (on('appends')) {
    const keysVsToy = ratio(s('rivulet-keys', 'perSec'), s('toy-keys', 'perSec'));
    lines.push(
      ['appends 50 clients/100 streams/unique keys >= 1.0x the group-commit toy', fmtX(keysVsToy), verdict(keysVsToy, '>=', 1)],
      ['  ... and p99 < 15 ms', `${fmtMs(s('rivulet-keys', 'p99ms'))} ms`, verdict(s('rivulet-keys', 'p99ms'), '<', 15)],
      ['  ... Redis XADD appendfsync always (goal, reported)', fmtX(ratio(s('rivulet-keys', 'perSec'), s('redis-xadd', 'perSec'))), 'INFO'],
    );
    if (abCli) {
      lines.push(
        ['  ... this build ÷ --ab-cli build, appends with keys', fmtX(ratio(s('rivulet-keys', 'perSec'), s('rivulet-ab-keys', 'perSec'))), 'INFO'],
        ['  ... CPU per append, this build ÷ --ab-cli build', fmtX(ratio(s('rivulet-keys', 'cpuUsPerReq'), s('rivulet-ab-keys', 'cpuUsPerReq'))), 'INFO'],
      );
    }
    const keysCost = cost(s('rivulet-keys', 'perSec'), s('rivulet-nokeys', 'perSec'));
    lines.push(
      ['idempotency keys cost <= 10 % of throughput (Rivulet)', pct(keysCost), verdict(keysCost, '<=', 0.1)],
      ['  ... the toy, for comparison', pct(cost(s('toy-keys', 'perSec'), s('toy-nokeys', 'perSec'))), 'INFO'],
    );
  }
  if (on('appends200')) {
    const p99 = s('rivulet-keys-200', 'p99ms');
    lines.push(['200 clients: p99 < 25 ms', `${fmtMs(p99)} ms, ${fmtX(ratio(s('rivulet-keys-200', 'perSec'), s('redis-xadd-200', 'perSec')))} Redis`, verdict(p99, '<', 25)]);
    if (abCli) {
      lines.push([
        '  ... the --ab-cli build: p99, appends/s this build ÷ it',
        `${fmtMs(s('rivulet-ab-keys-200', 'p99ms'))} ms, ${fmtX(ratio(s('rivulet-keys-200', 'perSec'), s('rivulet-ab-keys-200', 'perSec')))}`,
        'INFO',
      ]);
    }
  }
  if (on('copy')) {
    const drain = ratio(s('rivulet-copy', 'perSec'), s('nats-sourcing', 'perSec'));
    lines.push(['copy backlog drain >= 0.5x NATS JetStream sourcing', fmtX(drain), verdict(drain, '>=', 0.5)]);
    if (abCli) {
      lines.push([
        '  ... this build ÷ --ab-cli build: copies/s, CPU per copy',
        `${fmtX(ratio(s('rivulet-copy', 'perSec'), s('rivulet-ab-copy', 'perSec')))}, ${fmtX(ratio(s('rivulet-copy', 'cpuUsPerCopy'), s('rivulet-ab-copy', 'cpuUsPerCopy')))}`,
        'INFO',
      ]);
    }
  }
  if (on('lag')) {
    const r = s('rivulet-lag', 'lagP99ms');
    const n = s('nats-lag', 'lagP99ms');
    lines.push(
      ['live copy lag p99 <= NATS sourcing', `${fmtMs(r)} ms against ${fmtMs(n)} ms (${fmtX(ratio(r, n))})`, verdict(ratio(r, n), '<=', 1)],
      ['  ... p50', `${fmtMs(s('rivulet-lag', 'lagP50ms'))} ms against ${fmtMs(s('nats-lag', 'lagP50ms'))} ms`, 'INFO'],
    );
  }
  if (on('reads')) {
    // The verdict on the pair of one shape and one kind of client: random full pages read one at a
    // time by a C client, wrk against Rivulet, redis-benchmark against Redis (bench/README "catch-up
    // reads (reads group)"); the Node reader of the same shape and the one-pass read beside it.
    const reads = ratio(s('rivulet-read-wrk', 'eventsPerSec'), s('redis-xrange', 'eventsPerSec'));
    const cpu = ratio(s('rivulet-read-wrk', 'cpuUsPerEvent'), s('redis-xrange', 'cpuUsPerEvent'));
    const nodeReader = ratio(s('rivulet-read-pages', 'eventsPerSec'), s('redis-xrange', 'eventsPerSec'));
    const onePass = ratio(s('rivulet-read', 'eventsPerSec'), s('redis-xrange', 'eventsPerSec'));
    lines.push(
      ['catch-up reads, pages of 500 from random offsets >= 1.0x Redis XRANGE', fmtX(reads), verdict(reads, '>=', 1)],
      ['  ... server CPU per event, Rivulet ÷ Redis', fmtX(cpu), 'INFO'],
      ['  ... the same pages read by the Node reader (its CPU on the same cores) ÷ Redis', fmtX(nodeReader), 'INFO'],
      ['  ... one sequential pass on a fresh server (another shape) ÷ Redis', fmtX(onePass), 'INFO'],
    );
    if (abCli) {
      const ab = (mine, other) => `${fmtX(ratio(s(mine, 'eventsPerSec'), s(other, 'eventsPerSec')))}, ${fmtX(ratio(s(mine, 'cpuUsPerEvent'), s(other, 'cpuUsPerEvent')))}`;
      lines.push(
        ['  ... this build ÷ --ab-cli build, random pages by wrk: events read/s, CPU per event', ab('rivulet-read-wrk', 'rivulet-ab-read-wrk'), 'INFO'],
        ['  ... this build ÷ --ab-cli build, random pages by the Node reader: events read/s, CPU per event', ab('rivulet-read-pages', 'rivulet-ab-read-pages'), 'INFO'],
        ['  ... this build ÷ --ab-cli build, one pass: events read/s, CPU per event', ab('rivulet-read', 'rivulet-ab-read'), 'INFO'],
      );
    }
  }
  if (on('subs')) {
    const subsCost = cost(s('rivulet-subs10', 'perSec'), s('rivulet-subs0', 'perSec'));
    lines.push(
      ['ten subscriptions with non-matching filters cost < 5 % of append throughput', pct(subsCost), verdict(subsCost, '<', 0.05)],
      ['  ... CPU per append with ÷ without them', fmtX(ratio(s('rivulet-subs10', 'cpuUsPerReq'), s('rivulet-subs0', 'cpuUsPerReq'))), 'INFO'],
    );
    if (abCli) {
      const abCost = cost(s('rivulet-ab-subs10', 'perSec'), s('rivulet-ab-subs0', 'perSec'));
      const extra = (with10, without) => s(with10, 'cpuUsPerReq') - s(without, 'cpuUsPerReq');
      lines.push(
        ['  ... the --ab-cli build: ten subscriptions cost', pct(abCost), 'INFO'],
        ['  ... CPU per append with them, this build ÷ --ab-cli build', fmtX(ratio(s('rivulet-subs10', 'cpuUsPerReq'), s('rivulet-ab-subs10', 'cpuUsPerReq'))), 'INFO'],
        [
          '  ... CPU the ten add per append (with - without), this build, --ab-cli build',
          `${extra('rivulet-subs10', 'rivulet-subs0').toFixed(1)} µs, ${extra('rivulet-ab-subs10', 'rivulet-ab-subs0').toFixed(1)} µs`,
          'INFO',
        ],
      );
    }
  }
  if (on('idle')) {
    const above = s('rivulet-idle', 'aboveEmptyMb');
    const idle = s('rivulet-idle', 'idleCpuPct');
    lines.push(
      ['streams with a copy subscription each: RSS above an empty server <= 40 MB', mb(above), verdict(above, '<=', 40)],
      ['  ... and CPU while idle <= 0.2 %', `${pctOfCore(idle)} (the empty server ${pctOfCore(s('rivulet-idle', 'emptyIdleCpuPct'))})`, verdict(idle, '<=', 0.2)],
      ...(abCli
        ? [
            ['  ... RSS above empty, this build ÷ --ab-cli build', fmtX(ratio(above, s('rivulet-ab-idle', 'aboveEmptyMb'))), 'INFO'],
            ['  ... idle CPU, this build ÷ --ab-cli build', fmtX(ratio(idle, s('rivulet-ab-idle', 'idleCpuPct'))), 'INFO'],
          ]
        : []),
      [
        '  ... NATS, streams each sourced by one more (reported)',
        `${mb(s('nats-idle', 'rssMb') - s('nats-idle', 'emptyRssMb'))} above its empty RSS for ${fmtN(s('nats-idle', 'streams'))} pairs, ${pctOfCore(s('nats-idle', 'idleCpuPct'))} idle`,
        'INFO',
      ],
    );
  }
  return lines;
}
