/**
 * The timer port's conformance checks (alarm-checks.ts) against Node's timers (hosts/node/alarms.ts).
 * The Durable Object alarm runs the same checks inside workerd (test/cloudflare/ports.test.ts).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nodeAlarms } from '../src/hosts/node/alarms.js';
import type { StreamAlarm } from '../src/ports/timer.js';
import { defineAlarmChecks } from './alarm-checks.js';

defineAlarmChecks({ describe, it, beforeEach, afterEach, expect }, 'nodeAlarms (hosts/node/alarms.ts)', { earlyMs: 2, lateMs: 150 }, async () => {
  const made: StreamAlarm[] = [];
  return {
    factory: {
      create(fire) {
        const alarm = nodeAlarms.create(fire);
        made.push(alarm);
        return alarm;
      },
    },
    cleanup: () => {
      for (const alarm of made) alarm.clear();
    },
  };
});
