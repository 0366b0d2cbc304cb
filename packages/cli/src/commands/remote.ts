/**
 * What every client command shares: the connection flags (--url, --token, --project, each with
 * its environment variable), --json, building the SDK client, and the error contract — a
 * RivuletError prints `rivulet <cmd>: CODE message` on stderr and exits 1; a UsageError is left
 * to main (usage text, exit 2). All network calls go through @rivulet/client. `remoteCommand`
 * puts these together for a command that takes fixed positionals.
 */
import { readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { createClient, RivuletError, type RivuletClient } from '@rivulet/client';
import { Defaults, type JsonObject } from '@rivulet/contract';
import type { ParseArgsConfig } from 'node:util';
import { parse, UsageError, type Command, type CommandIO } from '../command.js';

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

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

/** The flags a remote command parsed: the connection flags, its own, and --help. */
export type RemoteValues<O extends OptionsConfig> = ReturnType<typeof parse<typeof connectionOptions & O>>['values'];

export interface RemoteCommandSpec<O extends OptionsConfig, P extends readonly string[]> {
  name: string;
  summary: string;
  usage: string;
  /** The names of its positional arguments, all required, in order (the usage errors name them). */
  positionals: P;
  /** Its flags beyond the connection flags. */
  options?: O;
  /** The command this one is a subcommand of ("subscriptions"): its errors say `rivulet subscriptions rm: …`. */
  parent?: string;
}

export interface RemoteContext<O extends OptionsConfig, P extends readonly string[]> {
  values: RemoteValues<O>;
  args: { -readonly [K in keyof P]: string };
  io: RemoteIO;
  /**
   * The SDK client of the connection flags. Built when first asked for, so that the command's own
   * usage errors come before a bad --url, as they always have.
   */
  client(): RivuletClient;
}

/**
 * A client command: parses argv with the connection flags, answers --help with `usage` (exit 0),
 * expects exactly `positionals`, then runs `action` under reportErrors (a RivuletError is one
 * line and exit 1; a UsageError goes on to the caller, which prints the usage and exits 2).
 */
export function remoteCommand<O extends OptionsConfig = Record<never, never>, const P extends readonly string[] = readonly string[]>(
  spec: RemoteCommandSpec<O, P>,
  action: (context: RemoteContext<O, P>) => Promise<number>,
): Command {
  const label = spec.parent === undefined ? spec.name : `${spec.parent} ${spec.name}`;
  return {
    name: spec.name,
    summary: spec.summary,
    usage: spec.usage,
    async run(argv, io: RemoteIO) {
      const parsed = parse(argv, { ...connectionOptions, ...(spec.options as O) });
      // The parsed types stay open inside this generic function; RemoteValues<O> is exact where it is used.
      const values = parsed.values as RemoteValues<O> & ConnectionValues & { help?: boolean };
      if (values.help) {
        io.out(spec.usage);
        return 0;
      }
      const args = expectPositionals(parsed.positionals, spec.positionals) as RemoteContext<O, P>['args'];
      let client: RivuletClient | undefined;
      const context: RemoteContext<O, P> = { values, args, io, client: () => (client ??= clientFrom(values, io.env)) };
      return reportErrors(label, io, () => action(context));
    },
  };
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
