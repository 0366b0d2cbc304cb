import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '@rivulet/client';
import { rivulet, startTestServer, type TestServer } from './harness.js';

let t: TestServer;
let files: string;
beforeEach(async () => {
  t = await startTestServer();
  files = mkdtempSync(join(tmpdir(), 'rivulet-cli-progress-'));
});
afterEach(async () => {
  await t.dispose();
  rmSync(files, { recursive: true, force: true });
});

/** A stand-in for standard error: a terminal or not, recording what is drawn on it. */
function terminal(isTTY: boolean) {
  const stream = new PassThrough() as PassThrough & { isTTY: boolean; columns: number; cursorTo(): boolean; clearLine(): boolean; moveCursor(): boolean };
  Object.assign(stream, { isTTY, columns: 120, cursorTo: () => true, clearLine: () => true, moveCursor: () => true });
  let text = '';
  // Decoded as a stream: a character whose UTF-8 bytes arrive in two chunks stays whole.
  stream.setEncoding('utf8');
  stream.on('data', (s: string) => {
    text += s;
  });
  return { stream: stream as unknown as NodeJS.WriteStream, drawn: () => text };
}

describe('progress of export and import', () => {
  it('draws events for export and bytes of the file for import on a terminal, nothing elsewhere', async () => {
    await createClient({ url: t.url }).append('/p', [{ type: 'a' }, { type: 'b' }]);
    const tty = terminal(true);
    const exported = await rivulet(t.url, ['export', '/p'], { progress: tty.stream });
    expect(exported.code).toBe(0);
    expect(tty.drawn()).toMatch(/export \[.*\] 100% 3\/3 events/);
    const file = join(files, 'p.ndjson');
    writeFileSync(file, exported.out.map((l) => `${l}\n`).join(''));
    const size = statSync(file).size;
    const importing = terminal(true);
    expect((await rivulet(t.url, ['import', '--file', file, '--to', '/q'], { progress: importing.stream })).code).toBe(0);
    expect(importing.drawn()).toMatch(new RegExp(`import \\[.*\\] 100% ${size}/${size} bytes`));
    const pipe = terminal(false);
    expect((await rivulet(t.url, ['export', '/p'], { progress: pipe.stream })).code).toBe(0);
    expect((await rivulet(t.url, ['import', '--file', file, '--to', '/q'], { progress: pipe.stream })).code).toBe(0);
    expect(pipe.drawn()).toBe('');
    const quiet = terminal(true);
    expect((await rivulet(t.url, ['import', '--file', file, '--to', '/q', '--json'], { progress: quiet.stream })).code).toBe(0);
    expect(quiet.drawn()).toBe('');
  });
});
