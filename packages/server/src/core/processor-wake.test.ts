import { describe, expect, it } from 'vitest';
import { judgeReport, judgeWakeAnswer } from './processor-wake.js';

describe('judgeWakeAnswer (protocol §20.3)', () => {
  const expected = { streamId: 's-1', head: 10 };

  it('accepts this lifetime, a checkpoint from 0 to the head, and a callable', () => {
    expect(judgeWakeAnswer({ streamId: 's-1', checkpointOffset: 0 }, true, expected)).toEqual({ ok: true, checkpoint: 0 });
    expect(judgeWakeAnswer({ streamId: 's-1', checkpointOffset: 10 }, true, expected)).toEqual({ ok: true, checkpoint: 10 });
  });

  it.each([
    [{ streamId: 's-2', checkpointOffset: 0 }, true, /lifetime is "s-1"/],
    [{ streamId: undefined, checkpointOffset: 0 }, true, /streamId nothing/],
    [{ streamId: 's-1', checkpointOffset: 11 }, true, /beyond this stream's head 10/],
    [{ streamId: 's-1', checkpointOffset: -1 }, true, /not a non-negative integer/],
    [{ streamId: 's-1', checkpointOffset: Number.NaN }, true, /not a non-negative integer/],
    [{ streamId: 's-1', checkpointOffset: 2 ** 53 }, true, /not a non-negative integer/],
    [{ streamId: 's-1', checkpointOffset: null }, true, /not a non-negative integer/],
    [{ streamId: 's-1', checkpointOffset: 3 }, false, /without a processEventBatch function/],
    [null, true, /not \{streamId, checkpointOffset, processEventBatch\}/],
  ] as const)('refuses %j (callable %s)', (answer, callable, message) => {
    const judged = judgeWakeAnswer(answer, callable, expected);
    expect(judged.ok).toBe(false);
    if (!judged.ok) expect(judged.error).toMatch(message);
  });
});

describe('judgeReport: only a checkpoint that grew is progress', () => {
  const batch = { offset: 5, checkpoint: 3, head: 9 };

  it('a checkpoint covering the event is progress (also one beyond it, up to the head)', () => {
    expect(judgeReport({ outcome: 'ok', checkpointOffset: 5 }, batch)).toEqual({ kind: 'progress', checkpoint: 5 });
    expect(judgeReport({ outcome: 'ok', checkpointOffset: 9 }, batch)).toEqual({ kind: 'progress', checkpoint: 9 });
  });

  it.each([
    [{ outcome: 'ok', checkpointOffset: 3 }, 'failing', /did not grow \(it was 3\)/],
    [{ outcome: 'ok', checkpointOffset: 1 }, 'failing', /did not grow/],
    [{ outcome: 'ok', checkpointOffset: 4 }, 'failing', /does not cover offset 5/],
    [{ outcome: 'ok', checkpointOffset: 10 }, 'failing', /beyond this stream's head 9/],
    [{ outcome: 'ok', checkpointOffset: 5.5 }, 'failing', /neither/],
    [{ outcome: 'ok' }, 'failing', /neither/],
    ['ok', 'failing', /neither/],
    [undefined, 'failing', /reported nothing/],
    [{ outcome: 'error', error: { message: 'boom' } }, 'failing', /failed on offset 5: boom/],
    [{ outcome: 'error', error: { message: 'boom', retryable: true } }, 'failing', /boom/],
    [{ outcome: 'error', error: { message: 'never', retryable: false } }, 'fatal', /never/],
  ] as const)('%j is %s', (result, failure, message) => {
    const judged = judgeReport(result, batch);
    expect(judged).toMatchObject({ kind: 'failure', failure });
    if (judged.kind === 'failure') expect(judged.error).toMatch(message);
  });
});
