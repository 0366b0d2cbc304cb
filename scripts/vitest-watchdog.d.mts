// Types of scripts/vitest-watchdog.mjs, for the test that drives it.
import type { StdioOptions } from 'node:child_process';

export interface Progress {
  passed: number;
  failed: number;
  running: { file: string; project: string; startedAt: number; lastTest?: string; lastTestAt?: number; lastTestEnded?: boolean }[];
}
export interface WatchdogOptions {
  fileLimitMs?: number;
  testLimitMs?: number | undefined;
  runLimitMs?: number;
  pollMs?: number;
  log?: (line: string) => void;
  stdio?: StdioOptions;
  cwd?: string;
}
export interface WatchdogOutcome {
  ok: boolean;
  code: number | null;
  stopped: boolean;
  leftovers: string[];
}
export function readProgress(file: string): Progress;
export function runVitest(args: string[], env: Record<string, string>, options?: WatchdogOptions): Promise<WatchdogOutcome>;
export function runningInGroup(psOutput: string, pgid: number): string[];
