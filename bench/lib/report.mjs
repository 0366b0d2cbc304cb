/**
 * What every benchmark script reports with: a JSON call to a server, medians, number formats, the
 * machine description stored with each result, markdown tables and the result file.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative } from 'node:path';
import { cpuModel, gitState, root } from './processes.mjs';

/** One JSON request to a Rivulet server; a non-2xx answer throws with its body. */
export async function call(url, method, path, body) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text);
}

/** The payload of every preloaded event (about 100 bytes of JSON). */
export const PAYLOAD = { user: 'u-00042', text: 'the quick brown fox jumps over the lazy dog 0123456789', n: 0 };

/** Appends `count` events of about 100 bytes to `path` in batches of 1000; answers the head. */
export async function preload(url, path, count) {
  for (let done = 0; done < count; ) {
    const n = Math.min(1000, count - done);
    await call(url, 'POST', `/v1/streams${path}`, Array.from({ length: n }, (_, i) => ({ type: 'bench/e', payload: { ...PAYLOAD, n: done + i } })));
    done += n;
  }
  return (await call(url, 'GET', `/v1/streams${path}?limit=1`)).streamMaxOffset;
}

/** The median of the finite values (the lower middle one of an even count); NaN when none. */
export function median(values) {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  return v.length ? v[Math.floor((v.length - 1) / 2)] : NaN;
}

export const fmtN = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');
export const fmtMs = (n) => (Number.isFinite(n) ? (n < 10 ? n.toFixed(2) : n.toFixed(1)) : '-');
export const fmtX = (n) => (Number.isFinite(n) ? `${n.toFixed(2)}x` : '-');

/** What a result file records about where it was measured. */
export function machineInfo(startedAt = new Date()) {
  return {
    date: startedAt.toISOString(),
    nproc: os.availableParallelism?.() ?? os.cpus().length,
    cpuModel: cpuModel(),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    loadavgAtStart: os.loadavg(),
    git: gitState(),
  };
}

/** A markdown table: the first `leftColumns` columns left-aligned, the others right-aligned. */
export function table(header, rows, leftColumns = 1) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => `| ${cells.map((c, i) => (i < leftColumns ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  return [line(header), `|${widths.map((w, i) => (i < leftColumns ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...rows.map(line)].join('\n');
}

/**
 * Writes `result` as bench/results/<bench>-<timestamp>.json (or `out`), prints where, and answers
 * the path written.
 */
export function writeResult(bench, startedAt, result, out) {
  const file = out ?? join(root, 'bench', 'results', `${bench}-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify({ bench, ...result }, null, 2)}\n`);
  console.log(`results: ${relative(process.cwd(), file)}`);
  return file;
}
