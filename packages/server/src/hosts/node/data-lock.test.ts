/**
 * The data-folder lock (protocol §16.3): held by the kernel for a live holder, in this process or
 * another, gone with the holder however it ends, and never decided by a pid written in a file.
 * Holders in other processes run the built lock (npm test builds first).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { DataFolderInUse, LOCK_FILE, lockDataFolder } from './data-lock.js';
import { startNodeServer } from './serve.js';

const BUILT_LOCK = fileURLToPath(new URL('../../../dist/hosts/node/data-lock.js', import.meta.url));

let dirs: string[] = [];
let children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children) child.kill('SIGKILL');
  children = [];
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs = [];
});

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-lock-'));
  dirs.push(dir);
  return dir;
}

/**
 * Another process that takes the lock, says "held", and lets go after `releaseAfterMs` (never if
 * null). One that never lets go drops the function that would and runs full garbage collections
 * first: the lock must outlive every reference to it.
 */
async function holderProcess(dir: string, releaseAfterMs: number | null): Promise<ChildProcess> {
  const code = `
    const { lockDataFolder } = await import(${JSON.stringify(BUILT_LOCK)});
    ${
      releaseAfterMs === null
        ? `lockDataFolder(${JSON.stringify(dir)});
           for (let i = 0; i < 3; i++) { globalThis.gc(); await new Promise((r) => setImmediate(r)); }
           process.stdout.write('held\\n');
           setInterval(() => globalThis.gc(), 20);`
        : `const unlock = lockDataFolder(${JSON.stringify(dir)});
           process.stdout.write('held\\n');
           setTimeout(() => { unlock(); process.exit(0); }, ${releaseAfterMs});`
    }
  `;
  const child = spawn(process.execPath, ['--expose-gc', '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('held')) resolve();
    });
    child.once('exit', (status) => reject(new Error(`the holder exited early (${status})`)));
  });
  return child;
}

function refusal(fn: () => unknown): DataFolderInUse {
  try {
    fn();
  } catch (error) {
    if (error instanceof DataFolderInUse) return error;
    throw error;
  }
  throw new Error('the lock was taken');
}

describe('data-folder lock', () => {
  it('refuses a second holder in the same process, naming the folder, until the first lets go', () => {
    const dir = folder();
    const unlock = lockDataFolder(dir);
    const busy = refusal(() => lockDataFolder(dir, 50));
    expect(busy.message).toBe(
      `another Rivulet server is using the data folder ${dir} (it holds ${join(dir, LOCK_FILE)}); stop it first or choose another --data folder`,
    );
    unlock();
    unlock(); // letting go twice is harmless
    lockDataFolder(dir)();
  });

  it('refuses while a live process holds it, and is free at once after that process is killed with SIGKILL (the stale file stays)', async () => {
    const dir = folder();
    const holder = await holderProcess(dir, null);
    const started = performance.now();
    refusal(() => lockDataFolder(dir, 200));
    // It waited for the holder before calling the folder in use.
    expect(performance.now() - started).toBeGreaterThanOrEqual(150);
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    expect(existsSync(join(dir, LOCK_FILE))).toBe(true);
    lockDataFolder(dir, 0)();
  });

  it('waits for a holder that is exiting', async () => {
    const dir = folder();
    await holderProcess(dir, 300);
    const unlock = lockDataFolder(dir, 5_000);
    unlock();
  });

  it('trusts no pid: a lock file of an earlier version naming a live process does not block', () => {
    const dir = folder();
    // Earlier versions wrote the owner's pid to LOCK; after a restart that pid may be anyone's.
    writeFileSync(join(dir, 'LOCK'), String(process.ppid));
    lockDataFolder(dir)();
  });

  it('a second server on a folder in use refuses to start and says which folder', async () => {
    const dir = folder();
    const first = await startNodeServer({ port: 0, data: dir });
    try {
      await expect(startNodeServer({ port: 0, data: dir })).rejects.toThrow(`another Rivulet server is using the data folder ${dir}`);
    } finally {
      await first.close();
    }
    const again = await startNodeServer({ port: 0, data: dir });
    await again.close();
  });
});
