/** The timer port in the Node host: one timeout per stream alarm (re-set replaces it). */
import type { AlarmFactory } from '../../ports/timer.js';

const MAX_DELAY = 2_147_483_647;

export const nodeAlarms: AlarmFactory = {
  create(fire) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    return {
      set(atMs) {
        if (timer) clearTimeout(timer);
        timer = setTimeout(fire, Math.min(MAX_DELAY, Math.max(0, atMs - Date.now())));
      },
      clear() {
        if (timer) clearTimeout(timer);
        timer = undefined;
      },
    };
  },
};
