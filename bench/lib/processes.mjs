/**
 * What every benchmark shares: child processes and temporary folders that are cleaned up on exit
 * (also on Ctrl-C), starting and stopping a server child, CPU accounting from /proc, and a
 * description of the machine and the commit measured.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CLI = join(root, 'packages', 'cli', 'bin', 'rivulet.js');

let tmpRoot;
const children = new Set();
let cleaned = false;

/** Creates the run's temporary root (removed on exit) and answers a function making fresh folders in it. */
export function tempFolders(prefix) {
  tmpRoot ??= mkdtempSync(join(os.tmpdir(), prefix));
  let dirCounter = 0;
  return (label) => {
    const dir = join(tmpRoot, `${String(++dirCounter).padStart(3, '0')}-${label}`);
    mkdirSync(dir, { recursive: true });
    return dir;
  };
}

function cleanup() {
  if (cleaned) return;
  cleaned = true;
  for (const child of children) child.kill('SIGKILL');
  if (tmpRoot) rmSync(tmpRoot, { recursive: true, force: true });
}
process.on('exit', cleanup);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    cleanup();
    process.exit(130);
  });
}

/** Tracks a child so that it is killed when the benchmark exits. */
export function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/**
 * Runs a program to its end (tracked, killed after `timeoutMs`) and resolves what it printed on
 * stdout and stderr; rejects when it cannot start or exits other than 0, with the start of it.
 */
export function runToEnd(command, args, timeoutMs) {
  const child = track(spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${command} exited ${code ?? signal}: ${out.slice(0, 300)}`));
    });
  });
}

const CLK_TCK = 100; // Linux USER_HZ
export function procCpuMs(pid, withChildren = false) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]) + (withChildren ? Number(fields[13]) + Number(fields[14]) : 0);
    return (ticks * 1000) / CLK_TCK; // utime + stime (+ cutime + cstime)
  } catch {
    return NaN;
  }
}
/** CPU of this process plus its waited-for children (utime, stime, cutime, cstime). */
export function ownCpuMs() {
  return procCpuMs('self', true);
}
export function machineBusyMs() {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
    const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
    return { busy: ((user + nice + system + irq + softirq + steal) * 1000) / CLK_TCK, idle: ((idle + iowait) * 1000) / CLK_TCK };
  } catch {
    return null;
  }
}

/** Starts a server child and resolves once it printed "listening on URL". */
export function startServer(args, label) {
  return new Promise((resolvePromise, reject) => {
    const child = track(spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    let err = '';
    const timer = setTimeout(() => fail(new Error(`${label} did not start in 20 s\n${out}${err}`)), 20_000);
    const fail = (error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m && timer) {
        clearTimeout(timer);
        resolvePromise({ child, url: m[1], stderr: () => err });
      }
    });
    child.stderr.on('data', (chunk) => {
      err += chunk;
    });
    child.once('exit', (code, signal) => {
      if (!/listening on/.test(out)) fail(new Error(`${label} exited (${code ?? signal}) before listening\n${out}${err}`));
    });
  });
}

/** SIGTERM, then SIGKILL after 10 s; resolves with the child's stderr. */
export function stopServer(server) {
  const { child } = server;
  return new Promise((resolvePromise) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolvePromise(server.stderr());
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolvePromise(server.stderr());
    });
    child.kill('SIGTERM');
  });
}

/** The commit measured, and whether packages/ had uncommitted changes (the build measured them too). */
export function gitState() {
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'packages'], { cwd: root, encoding: 'utf8' }).trim() !== '';
    return { commit, packagesDirty: dirty };
  } catch {
    return null;
  }
}

export function cpuModel() {
  try {
    return /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model;
  } catch {
    return os.cpus()[0]?.model;
  }
}

/**
 * A child Node process that prints "listening on <url>" when ready, then lines. Resolves with
 * `{child, url, lines, waitFor, send, stop, stderr}`: `lines` collects every line after the ready
 * one; `waitFor(predicate, timeoutMs?)` resolves with the predicate's first truthy answer over
 * `lines`; `send(text)` writes a line to its stdin (with `stdin: true`).
 */
export function startLineChild(script, args, label, { nodeArgs = [], stdin = false, waitTimeoutMs = 60_000 } = {}) {
  return new Promise((resolvePromise, reject) => {
    const child = track(spawn(process.execPath, [...nodeArgs, script, ...args], { cwd: root, stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] }));
    const lines = [];
    const waiters = new Set();
    let buffer = '';
    let url;
    let err = '';
    const stderr = () => err;
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (c) => (err += c));
    child.stdout.on('data', (chunk) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf('\n')) !== -1) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (url === undefined) {
          const m = /listening on (\S+)/.exec(line);
          if (m) {
            url = m[1];
            resolvePromise({ child, url, lines, waitFor, send: (text) => child.stdin.write(`${text}\n`), stop: () => stopServer({ child, stderr }), stderr });
          }
          continue;
        }
        lines.push(line);
        for (const w of waiters) w();
      }
    });
    child.once('exit', (code) => {
      if (url === undefined) reject(new Error(`${label} exited (${code}) before it was ready\n${err}`));
    });
    function waitFor(predicate, timeoutMs = waitTimeoutMs) {
      return new Promise((res, rej) => {
        const check = () => {
          const found = predicate(lines);
          if (found) {
            waiters.delete(check);
            clearTimeout(timer);
            res(found);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          rej(new Error(`${label}: condition not met in ${timeoutMs} ms\n${err}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    }
  });
}


/**
 * Starts a program that is not Node (redis-server, nats-server, …) as a tracked child and resolves
 * once a line of its output matches `ready`; rejects if it exits first or is not ready in 20 s.
 * Resolves with `{child, stop, output}`; `stop()` is stopServer's SIGTERM-then-SIGKILL.
 */
export function startProgram(command, args, ready, label) {
  return new Promise((resolvePromise, reject) => {
    const child = track(spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    let done = false;
    const output = () => out;
    const timer = setTimeout(() => settle(new Error(`${label} did not start in 20 s\n${out}`)), 20_000);
    const settle = (error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (error) {
        child.kill('SIGKILL');
        reject(error);
      } else resolvePromise({ child, output, stop: () => stopServer({ child, stderr: output }) });
    };
    for (const stream of [child.stdout, child.stderr]) {
      stream.setEncoding('utf8');
      stream.on('data', (chunk) => {
        out += chunk;
        if (ready.test(out)) settle(null);
      });
    }
    child.once('error', (error) => settle(new Error(`${label} could not start: ${error.message}`)));
    child.once('exit', (code, signal) => settle(new Error(`${label} exited (${code ?? signal}) before it was ready\n${out}`)));
  });
}

/** A TCP port free on 127.0.0.1 right now (for programs that cannot report the port they took). */
export function freePort() {
  return new Promise((resolvePromise, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePromise(port));
    });
  });
}
