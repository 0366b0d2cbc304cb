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
