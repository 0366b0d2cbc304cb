/**
 * V8's linear-time engine for regular expressions that backtrack too much (protocol §16.8). A
 * JSONata regex runs natively, in one step of the expression meter, so the meter cannot stop one
 * that backtracks exponentially (`/(a+)+$/` on forty `a`s and a `b`); with this V8 flag such a
 * match switches to an engine whose time is linear in the input. Patterns that engine cannot run
 * (backreferences, lookarounds) are refused when an expression is configured (core/jsonata.ts).
 * Set once per process, before expressions are compiled.
 */
import { setFlagsFromString } from 'node:v8';

let enabled = false;

export function enableRegexpFallback(): void {
  if (enabled) return;
  enabled = true;
  setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');
}
