/**
 * What a subscription delivers to, as one string (protocol §21.1, `target`): the server's listing
 * and the SDK's per-stream summary both name a receiver this way, so they agree by construction.
 */
import type { Receiver } from './subscriptions.js';

/** The receiving stream path, the webhook URL, or the ITX expression as JSON text. */
export function subscriptionTarget(receiver: Receiver): string {
  switch (receiver.action) {
    case 'copy-to-stream':
      return receiver.receivingStreamPath;
    case 'webhook-post':
      return receiver.url;
    case 'itx-call':
    case 'processor-wake':
      return JSON.stringify(receiver.expression);
  }
}
