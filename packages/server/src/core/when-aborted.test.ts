import { describe, expect, it } from 'vitest';
import { whenAborted } from './when-aborted.js';

describe('whenAborted', () => {
  it('runs at once for a signal that has already aborted, and once only', () => {
    const controller = new AbortController();
    controller.abort();
    let runs = 0;
    whenAborted(controller.signal, () => runs++);
    expect(runs).toBe(1);
  });

  it('runs once when the signal aborts later, and not after it stopped listening', () => {
    const later = new AbortController();
    let runs = 0;
    whenAborted(later.signal, () => runs++);
    expect(runs).toBe(0);
    later.abort();
    later.signal.dispatchEvent(new Event('abort'));
    expect(runs).toBe(1);

    const forgotten = new AbortController();
    let forgottenRuns = 0;
    const stop = whenAborted(forgotten.signal, () => forgottenRuns++);
    stop();
    forgotten.abort();
    expect(forgottenRuns).toBe(0);
  });

  it('does nothing without a signal', () => {
    let runs = 0;
    whenAborted(undefined, () => runs++)();
    expect(runs).toBe(0);
  });
});
