/**
 * Rivulet's random-page read driven by wrk (Debian's, C with LuaJIT), the HTTP counterpart of
 * redis-benchmark driving Redis's XRANGE: one thread, one connection, one GET at a time, each after
 * a random offset whose page is full. The Node reader of read-client.mjs spends 0.4 µs of CPU per
 * event on the two cores the server also runs on, which redis-benchmark does not; this contender
 * reads the same pages with a client of Redis's kind (bench/README "catch-up reads (reads group)").
 *
 * Every answer is checked, in Lua, to be a 200 whose first event's offset n starts a full page (a
 * random start can be) and that ends with offset n + page - 1: a wrong, short or failed page
 * counts as bad and fails the run. wrk runs for a
 * fixed time (its main thread sleeps for `-d`), so the figure is pages per second of that time.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runToEnd } from '../lib/processes.mjs';

/**
 * How far from a page's end its last event's offset is looked for: more than one event of the
 * benchmark's takes (about 230 bytes); a page whose last event is bigger fails the check, loudly.
 */
const TAIL_BYTES = 4096;

/** The Lua script: random full pages of `page` after offsets `first - 1 … first - 2 + span`. */
export function wrkReadScript({ path, firstOffset, span, page, seed }) {
  return `-- written by bench/peers/wrk-read.mjs
local path, first, span, page = ${JSON.stringify(path)}, ${firstOffset}, ${span}, ${page}
bad, checked, firstBad = 0, 0, ""
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) math.randomseed(${seed}) end
function request()
  local after = first - 1 + math.floor(math.random() * span)
  return wrk.format("GET", path .. "?afterOffset=" .. after .. "&limit=" .. page)
end
-- wrk asks for a request before the previous answer is handled, so an answer is checked on its
-- own: its first event's offset n, and n + page - 1 in the last ${TAIL_BYTES} bytes (a full page,
-- in order). Looking for the last one from the first on scanned the whole page in Lua and made
-- wrk the bottleneck (bench/README "the read cache"); where the last event must be is enough.
function response(status, headers, body)
  checked = checked + 1
  local ok = false
  local _, e = string.find(body, '"offset":', 1, true)
  local n = e and tonumber(string.match(body, "^%d+", e + 1))
  if status == 200 and n and n >= first and n - first < span then
    ok = string.find(body, '"offset":' .. (n + page - 1) .. ',', math.max(e, #body - ${TAIL_BYTES}), true) ~= nil
  end
  if not ok then
    if bad == 0 then firstBad = "status " .. status .. ", " .. #body .. " bytes, first offset " .. tostring(n) end
    bad = bad + 1
  end
end
function done(summary, latency, requests)
  local t = threads[1]
  io.write(string.format('WRK {"requests":%d,"durationUs":%d,"checked":%d,"bad":%d,"firstBad":%q,"socketErrors":%d}\\n',
    summary.requests, summary.duration, t:get("checked"), t:get("bad"), t:get("firstBad"),
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
`;
}

/**
 * Reads random pages of `page` events of the stream at `url` + `path` (offsets firstOffset…lastOffset)
 * for `seconds`; answers pages, events per second and the checks. Throws on any bad page.
 */
export async function wrkPagesRead({ url, path, firstOffset, lastOffset, page, seconds, seed }) {
  const span = lastOffset - firstOffset + 2 - page;
  if (span < 1) throw new Error(`wrk read: a stream of ${firstOffset}…${lastOffset} holds no full page of ${page}`);
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-wrk-'));
  try {
    const script = join(dir, 'read.lua');
    writeFileSync(script, wrkReadScript({ path, firstOffset, span, page, seed }));
    const out = await runToEnd('wrk', ['-t1', '-c1', `-d${seconds}s`, '--timeout', '10s', '-s', script, url], (seconds + 30) * 1000);
    const line = out.split('\n').find((l) => l.startsWith('WRK '));
    if (!line) throw new Error(`wrk printed no summary:\n${out}`);
    const r = JSON.parse(line.slice(4));
    if (r.bad > 0 || r.socketErrors > 0 || r.checked === 0) {
      throw new Error(`wrk read: ${r.bad} bad pages of ${r.checked} (first: ${r.firstBad}), ${r.socketErrors} socket errors`);
    }
    const secondsRun = r.durationUs / 1e6;
    return { pages: r.checked, seconds: secondsRun, eventsPerSec: (r.checked * page) / secondsRun };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
