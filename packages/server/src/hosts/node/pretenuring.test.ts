/**
 * When the Node host turns V8's allocation-site pretenuring off (pretenuring.ts): from V8 13 on,
 * unless the operator gave a pretenuring flag. What the flag does to a real server's process is
 * checked in test/e2e/pretenuring.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { PRETENURING_OFF_FROM_V8, turnsPretenuringOff } from './pretenuring.js';

describe('turnsPretenuringOff', () => {
  it('turns it off from V8 13 on (Node 24), not before (Node 20 and 22)', () => {
    expect(PRETENURING_OFF_FROM_V8).toBe(13);
    expect(turnsPretenuringOff('11.3.244.8-node.33', [])).toBe(false);
    expect(turnsPretenuringOff('12.4.254.21-node.33', [])).toBe(false);
    expect(turnsPretenuringOff('13.6.233.10-node.28', [])).toBe(true);
    expect(turnsPretenuringOff('14.1.0.0', [])).toBe(true);
  });

  it('leaves it to a pretenuring flag the operator gave, either way and in either spelling', () => {
    for (const flag of ['--allocation-site-pretenuring', '--no-allocation-site-pretenuring', '--allocation_site_pretenuring', '--noallocation-site-pretenuring']) {
      expect(turnsPretenuringOff('13.6.233.10-node.28', ['--max-old-space-size=512', flag])).toBe(false);
    }
    expect(turnsPretenuringOff('13.6.233.10-node.28', ['--max-old-space-size=512', '--trace-pretenuring-statistics'])).toBe(true);
  });

  it('an unreadable V8 version leaves V8 as it is', () => {
    expect(turnsPretenuringOff('', [])).toBe(false);
    expect(turnsPretenuringOff('v13', [])).toBe(false);
  });
});
