/**
 * A reciprocal pair of wildcard copies (protocol §13.3): /a copies everything to /b under key
 * "ab", then /b copies everything back to /a under "ba", and the pair is left once both have
 * caught up and no alarm is armed, so the cycle drops it made are all committed.
 */
import { waitFor, type Harness } from './harness.js';
import { copySub, x } from './payloads.js';

export async function settleReciprocalCopies(h: Harness): Promise<void> {
  await h.configure('/a', copySub('ab', '/b'));
  await h.append('/a', x(1));
  await h.caughtUp('/a', 'ab');
  await h.configure('/b', copySub('ba', '/a'));
  await h.append('/b', x(2));
  await waitFor(() => {
    const a = h.sub('/a', 'ab');
    const b = h.sub('/b', 'ba');
    return a.acknowledgedOffset === h.head('/a') && b.acknowledgedOffset === h.head('/b') && h.alarms.armed.length === 0;
  }, 'both directions caught up');
}
