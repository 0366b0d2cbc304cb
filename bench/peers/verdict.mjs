/**
 * The pure part of bench/peers: medians over rounds, ratios, and the PASS/MISS verdict of each
 * target of issue 19 (tested in verdict.test.mjs). No I/O here.
 */

/** The median of the finite values (mean of the middle two for an even count); NaN when none. */
export function median(values) {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/** a ÷ b, or NaN when either is missing or b is not positive. */
export function ratio(a, b) {
  return Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : NaN;
}

/** 1 − with ÷ without: the share of throughput a feature costs (negative when it gained). */
export function cost(withFeature, without) {
  const r = ratio(withFeature, without);
  return Number.isFinite(r) ? 1 - r : NaN;
}

/**
 * A target's verdict: 'PASS' when `value op limit` holds, 'MISS' when it does not, 'SKIP' when the
 * value could not be measured (NaN: a peer missing, a run failed), so a missing figure never passes.
 * @param {number} value @param {'>=' | '<' | '<='} op @param {number} limit
 */
export function verdict(value, op, limit) {
  if (!Number.isFinite(value)) return 'SKIP';
  const ok = op === '>=' ? value >= limit : op === '<' ? value < limit : op === '<=' ? value <= limit : null;
  if (ok === null) throw new Error(`unknown comparison ${op}`);
  return ok ? 'PASS' : 'MISS';
}

/**
 * The order of the contenders in round `round`: as given in even rounds, reversed in odd ones, so
 * a drift of the machine's load over the run hits each of them alike.
 */
export function roundOrder(names, round) {
  return round % 2 === 0 ? [...names] : [...names].reverse();
}

/** Parses redis-benchmark's --csv output into {rps, p50ms, p99ms} of its one test. */
export function parseRedisBenchmarkCsv(text) {
  const lines = text.trim().split('\n').filter((l) => l.startsWith('"'));
  if (lines.length < 2) throw new Error(`redis-benchmark printed no CSV result: ${text.slice(0, 300)}`);
  const cells = (line) => line.split(',').map((c) => c.replace(/^"|"$/g, ''));
  const header = cells(lines[0]);
  // The first cell is the command, which may hold commas and quotes of its own (a JSON value):
  // the figures are the last cells of the row.
  const figures = cells(lines[lines.length - 1]).slice(-(header.length - 1));
  const at = (name) => {
    const i = header.indexOf(name);
    if (i < 1) throw new Error(`redis-benchmark CSV has no column ${name}: ${lines[0]}`);
    return Number(figures[i - 1]);
  };
  return { rps: at('rps'), p50ms: at('p50_latency_ms'), p99ms: at('p99_latency_ms') };
}

/**
 * The p-th percentile (0 < p ≤ 100) of `values` by the nearest-rank method: the smallest value with
 * at least p % of the values at or below it. Missing values are ignored; NaN when none is left.
 */
export function percentile(values, p) {
  if (!(p > 0 && p <= 100)) throw new Error(`percentile must be in (0, 100], got ${p}`);
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  return v[Math.min(v.length, Math.ceil((p / 100) * v.length)) - 1];
}

/**
 * How many of `total` items a steady pacer of `ratePerSec` owes by `elapsedMs` after its start:
 * item i is due at i / rate seconds, so the first is due at once and none beyond `total`.
 */
export function dueCount(elapsedMs, ratePerSec, total) {
  if (elapsedMs < 0) return 0;
  return Math.min(total, Math.floor((elapsedMs * ratePerSec) / 1000) + 1);
}

/**
 * The live copy lags of a run: for every item measured, the time from its source acknowledgement
 * (`ackAt[i]`) to its copy being read on the target (`seenAt[i]`), both on one clock. An item that
 * was acknowledged but never seen is `missing` (a run with any missing copy has no verdict); an
 * item seen before its acknowledgement arrived (the copy can overtake the answer to the publisher)
 * counts as a lag of 0.
 */
export function copyLags(ackAt, seenAt) {
  const lags = [];
  let missing = 0;
  for (let i = 0; i < ackAt.length; i++) {
    if (!Number.isFinite(ackAt[i])) continue;
    if (!Number.isFinite(seenAt[i])) missing++;
    else lags.push(Math.max(0, seenAt[i] - ackAt[i]));
  }
  return { lags, missing };
}

/**
 * Whether a process's memory has settled: the last `window` samples (MB) span no more than
 * `toleranceMb`. Fewer samples than the window never count as settled.
 */
export function settled(samples, window, toleranceMb) {
  if (samples.length < window) return false;
  const last = samples.slice(-window);
  return Math.max(...last) - Math.min(...last) <= toleranceMb;
}

/** CPU time as a share of one core over a wall-clock window (0.002 = 0.2 %); NaN without a window. */
export function cpuShare(cpuMs, wallMs) {
  return Number.isFinite(cpuMs) && Number.isFinite(wallMs) && wallMs > 0 ? cpuMs / wallMs : NaN;
}
