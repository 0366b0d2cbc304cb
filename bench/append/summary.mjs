/**
 * What bench/append/run.mjs makes of its measurements: medians over rounds per mode and scenario,
 * the ratios to the baselines, the targets in bench/README.md (PASS/MISS), and the printed table.
 */
import { fmtMs, fmtN, fmtX, table } from '../lib/report.mjs';

/**
 * The median of the finite values; of an even count, the mean of the two middle ones (unlike
 * bench/lib/report.mjs's lower middle: with this bench's default of 2 rounds, that would report
 * the worse round alone).
 */
export function median(xs) {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

function aggregate(rs) {
  if (rs.length === 0) return null;
  return {
    eventsPerSec: median(rs.map((r) => r.eventsPerSec)),
    requestsPerSec: median(rs.map((r) => r.requestsPerSec)),
    p50ms: median(rs.map((r) => r.p50ms)),
    p99ms: median(rs.map((r) => r.p99ms)),
    serverCpu: median(rs.map((r) => r.serverCpu)),
    serverCpuPerRequestMs: median(rs.map((r) => r.serverCpuPerRequestMs)),
    maxOtherCores: Math.max(...rs.map((r) => (Number.isFinite(r.otherCores) ? r.otherCores : 0))),
    errors: rs.reduce((s, r) => s + r.errors, 0),
    rounds: rs.length,
  };
}

/**
 * Medians per mode and scenario for Rivulet, the bare baseline, the raw SQLite baseline and every
 * variant, with their ratios.
 * @param {{modes: string[], scenarios: string[], batch: number, variants: {name: string}[]}} cfg
 * @param {Record<string, {title: string}>} scenarios
 */
export function summarise(cfg, scenarios, runs, raw) {
  const pick = (impl, mode, scenario) => runs.filter((r) => r.impl === impl && r.mode === mode && r.scenario === scenario);
  const rawAgg = (mode, rows) => {
    const rs = raw.filter((r) => r.mode === mode && r.rowsPerTx === rows);
    return rs.length ? { rowsPerSec: median(rs.map((r) => r.rowsPerSec)), p50ms: median(rs.map((r) => r.p50ms)), p99ms: median(rs.map((r) => r.p99ms)) } : null;
  };
  const summary = [];
  for (const mode of cfg.modes) {
    for (const name of cfg.scenarios) {
      const rivulet = aggregate(pick('rivulet', mode, name));
      const baseline = aggregate(pick('baseline', mode, name));
      const rawBase = rawAgg(mode, name === 'c' ? cfg.batch : 1);
      summary.push({
        mode,
        scenario: name,
        title: scenarios[name].title,
        rivulet,
        baseline,
        raw: rawBase,
        ratioToBaseline: rivulet && baseline ? rivulet.eventsPerSec / baseline.eventsPerSec : null,
        ratioToRaw: rivulet && rawBase ? rivulet.eventsPerSec / rawBase.rowsPerSec : null,
        variants: Object.fromEntries(
          cfg.variants.map((v) => {
            const a = aggregate(pick(v.name, mode, name));
            return [
              v.name,
              a && {
                ...a,
                ratioToBaseline: baseline ? a.eventsPerSec / baseline.eventsPerSec : null,
                ratioToRivulet: rivulet ? a.eventsPerSec / rivulet.eventsPerSec : null,
              },
            ];
          }),
        ),
      });
    }
  }
  return summary;
}

/** The append targets (bench/README.md): (b) ≥ 1.0× the bare baseline with p99 < 25 ms, (a) ≥ 0.7×. */
export function judgeTargets(summary) {
  const targets = [];
  for (const s of summary) {
    if (s.scenario === 'b' && s.rivulet && s.baseline) {
      const pass = s.ratioToBaseline >= 1.0 && s.rivulet.p99ms < 25 && s.rivulet.errors === 0;
      targets.push({ mode: s.mode, scenario: 'b', target: '>= 1.0x bare node:http+SQLite, p99 < 25 ms', ratio: s.ratioToBaseline, p99ms: s.rivulet.p99ms, pass });
    }
    if (s.scenario === 'a' && s.rivulet && s.baseline) {
      const pass = s.ratioToBaseline >= 0.7 && s.rivulet.errors === 0;
      targets.push({ mode: s.mode, scenario: 'a', target: '>= 0.7x bare node:http+SQLite', ratio: s.ratioToBaseline, pass });
    }
  }
  return targets;
}

/** Prints the table of medians, the variants' medians and PASS/MISS per target. */
export function printSummary(summary, targets, cfg) {
  const header = [
    'mode',
    'scenario',
    'Rivulet ev/s',
    'req/s',
    'p50 ms',
    'p99 ms',
    'CPU µs/req',
    'bare http+SQLite ev/s',
    'p50/p99 ms',
    'CPU µs/req',
    'ratio',
    'raw SQLite rows/s',
    'ratio',
    'others',
  ];
  const us = (ms) => (Number.isFinite(ms) ? String(Math.round(ms * 1000)) : '-');
  const rows = summary.map((s) => [
    s.mode,
    `(${s.scenario}) ${s.title}`,
    fmtN(s.rivulet?.eventsPerSec),
    fmtN(s.rivulet?.requestsPerSec),
    fmtMs(s.rivulet?.p50ms),
    fmtMs(s.rivulet?.p99ms),
    us(s.rivulet?.serverCpuPerRequestMs),
    fmtN(s.baseline?.eventsPerSec),
    s.baseline ? `${fmtMs(s.baseline.p50ms)}/${fmtMs(s.baseline.p99ms)}` : '-',
    us(s.baseline?.serverCpuPerRequestMs),
    fmtX(s.ratioToBaseline),
    s.raw ? `${fmtN(s.raw.rowsPerSec)} (${s.scenario === 'c' ? cfg.batch : 1}/tx)` : '-',
    fmtX(s.ratioToRaw),
    `${Math.round(Math.max(s.rivulet?.maxOtherCores ?? 0, s.baseline?.maxOtherCores ?? 0) * 100)}%`,
  ]);
  console.log(`\n${table(header, rows, 2)}`);
  console.log(
    '\nmedians over rounds; CPU µs/req: CPU of the server process per request; others: most CPU (% of one core) that other processes used during any run of the row',
  );
  if (cfg.variants.length > 0) {
    console.log('\nvariants (medians):');
    for (const s of summary) {
      for (const [vname, v] of Object.entries(s.variants)) {
        if (!v) continue;
        console.log(
          `  ${s.mode.padEnd(7)} (${s.scenario}) ${vname}: ${fmtN(v.eventsPerSec)} ev/s ${fmtN(v.requestsPerSec)} req/s p50 ${fmtMs(v.p50ms)} p99 ${fmtMs(v.p99ms)} ms; ${fmtX(v.ratioToBaseline)} bare baseline, ${fmtX(v.ratioToRivulet)} rivulet`,
        );
      }
    }
  }
  console.log('');
  for (const t of targets) {
    console.log(
      `${t.pass ? 'PASS' : 'MISS'}  ${t.mode.padEnd(7)} (${t.scenario}) ${t.target}: ${fmtX(t.ratio)}${t.p99ms !== undefined ? `, p99 ${fmtMs(t.p99ms)} ms` : ''}`,
    );
  }
}
