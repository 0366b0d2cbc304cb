/**
 * The shape of one CLI command: a name, a one-line summary, its --help text, and a run function
 * answering the process exit code. Commands live one per file under commands/.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

export interface Command {
  name: string;
  summary: string;
  usage: string;
  run(argv: string[], io: CommandIO): Promise<number>;
}

export interface CommandIO {
  out(text: string): void;
  err(text: string): void;
  env: NodeJS.ProcessEnv;
  /** Standard output as a stream, for commands that write much data with backpressure (ndjson/output.ts). */
  stdout?: NodeJS.WritableStream;
}

export const processIO: CommandIO = {
  out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
  env: process.env,
  stdout: process.stdout,
};

/** A usage error: printed with the command's usage, exit code 2. */
export class UsageError extends Error {}

export function parse<T extends NonNullable<ParseArgsConfig['options']>>(
  argv: string[],
  options: T,
  allowPositionals = true,
) {
  try {
    return parseArgs({ args: argv, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** An integer flag or environment value, with a clear error. */
export function intOption(name: string, value: string | undefined, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value.trim())) throw new UsageError(`${name} must be a whole number, got "${value}"`);
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min) throw new UsageError(`${name} must be at least ${min}, got "${value}"`);
  if (n > max) throw new UsageError(`${name} must be at most ${max}, got "${value}"`);
  return n;
}

export function boolOption(name: string, value: string | boolean | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  if (typeof value === 'boolean') return value;
  const v = value.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new UsageError(`${name} must be true or false, got "${value}"`);
}
