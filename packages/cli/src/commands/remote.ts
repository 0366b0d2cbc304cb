/**
 * What every client command shares: the connection flags (--url, --token, --project, each with
 * its environment variable), --json, building the SDK client, and the error contract — a
 * RivuletError prints `rivulet <cmd>: CODE message` on stderr and exits 1; a UsageError is left
 * to main (usage text, exit 2). All network calls go through @rivulet/client.
 */
import { readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { createClient, RivuletError, type RivuletClient } from '@rivulet/client';
import { Defaults, type JsonObject } from '@rivulet/contract';
import { UsageError, type CommandIO } from '../command.js';

/** CommandIO plus what client commands may take from their caller (tests inject these). */
export interface RemoteIO extends CommandIO {
  /** The whole of standard input (for `--file -`). */
  readStdin?(): Promise<string>;
  /** Standard input as a stream (for `--file -` read line by line); process.stdin by default. */
  stdin?: Readable;
  /** Where progress bars draw (export, import); standard error by default, only if a terminal. */
  progress?: NodeJS.WriteStream;
  /** Stops a long-running command (tail); without it, SIGINT and SIGTERM do. */
  signal?: AbortSignal;
}

export const DEFAULT_URL = `http://${Defaults.host}:${Defaults.port}`;

export const connectionOptions = {
  url: { type: 'string' },
  token: { type: 'string' },
  project: { type: 'string' },
  json: { type: 'boolean' },
} as const;

export const connectionUsage = `Connection and output:
  --url URL        server URL (RIVULET_URL, default ${DEFAULT_URL})
  --token TOKEN    bearer token (RIVULET_TOKEN)
  --project ID     act for this project, sent as X-Project-Id (RIVULET_PROJECT)
  --json           machine-readable output
  -h, --help       show this help`;

export interface ConnectionValues {
  url?: string | undefined;
  token?: string | undefined;
  project?: string | undefined;
}

export function clientFrom(values: ConnectionValues, env: NodeJS.ProcessEnv): RivuletClient {
  const pick = (flag: string | undefined, variable: string) => {
    const value = flag ?? env[variable];
    return value === undefined || value === '' ? undefined : value;
  };
  const url = pick(values.url, 'RIVULET_URL') ?? DEFAULT_URL;
  try {
    return createClient({ url, token: pick(values.token, 'RIVULET_TOKEN'), projectId: pick(values.project, 'RIVULET_PROJECT') });
  } catch (error) {
    if (error instanceof RivuletError) throw new UsageError(`--url: ${error.message}`);
    throw error;
  }
}

/** Runs a command body, turning a RivuletError into the one-line report and exit code 1. */
export async function reportErrors(name: string, io: CommandIO, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (error) {
    if (!(error instanceof RivuletError)) throw error;
    io.err(`rivulet ${name}: ${error.code} ${error.message}`);
    return 1;
  }
}

export function expectPositionals(positionals: readonly string[], names: readonly string[]): string[] {
  if (positionals.length < names.length) throw new UsageError(`missing ${names[positionals.length]}`);
  if (positionals.length > names.length) throw new UsageError(`unexpected argument "${positionals[names.length]}"`);
  return [...positionals];
}

/** "a, b" → ["a", "b"]; an empty list is a usage error. */
export function typesOption(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const types = value
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  if (types.length === 0) throw new UsageError('--types needs at least one event type (a,b,…)');
  return types;
}

/** Parses a flag's JSON value, which must be an object (payloads and metadata are objects). */
export function jsonObjectOption(name: string, text: string | undefined): JsonObject | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${name} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError(`${name} must be a JSON object, like '{"id":7}'`);
  }
  return value as JsonObject;
}

/** An AbortSignal that fires on the caller's signal, or on Ctrl-C / SIGTERM; `dispose` unhooks. */
export function stopSignal(io: RemoteIO): { signal: AbortSignal; dispose(): void } {
  if (io.signal) return { signal: io.signal, dispose: () => undefined };
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return {
    signal: controller.signal,
    dispose() {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    },
  };
}

/** A small document (a subscription's configuration, say) from a file, or from standard input for "-". */
export async function readInput(file: string, io: RemoteIO): Promise<string> {
  if (file === '-') {
    if (io.readStdin) return io.readStdin();
    const chunks: Buffer[] = [];
    for await (const chunk of io.stdin ?? process.stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
    return Buffer.concat(chunks).toString('utf8');
  }
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
