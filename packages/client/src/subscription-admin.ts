/**
 * The SDK side of finding, inspecting and trying subscriptions (protocol §21–§23): the
 * cross-stream listing, the attempt history of one subscription and the dry run.
 */
import type {
  DeliveryAttemptsResponse,
  PreviewSubscriptionBody,
  PreviewSubscriptionResponse,
  SubscriptionListEntry,
  SubscriptionListResponse,
  SubscriptionStatus,
} from '@rivulet/contract';
import type { HttpClient } from './http.js';
import { apiUrl, streamUrl } from './urls.js';

interface Signal {
  signal?: AbortSignal | undefined;
}

export interface ListSubscriptionsOptions extends Signal {
  /** Only these statuses (default: every status). */
  status?: readonly SubscriptionStatus[] | undefined;
  /** Only subscriptions of streams at or below this path. */
  prefix?: string | undefined;
  /** Page size, 1–1000 (default 100). */
  limit?: number | undefined;
  /** The `next` of the previous page. */
  after?: string | undefined;
}

export interface DeliveryAttemptsOptions extends Signal {
  /** How many, newest first, 1–1000 (default 50). */
  limit?: number | undefined;
}

export interface SubscriptionAdminApi {
  /** One page of the caller project's subscriptions across its streams, halted first (protocol §21). */
  listSubscriptions(options?: ListSubscriptionsOptions): Promise<SubscriptionListResponse>;
  /** Every page of listSubscriptions, following `next`. */
  listAllSubscriptions(options?: Omit<ListSubscriptionsOptions, 'after'>): AsyncIterable<SubscriptionListEntry>;
  /** The newest delivery attempts of one subscription of `sourcePath` (protocol §22). */
  deliveryAttempts(sourcePath: string, subscriptionKey: string, options?: DeliveryAttemptsOptions): Promise<DeliveryAttemptsResponse>;
  /** What a subscription-configured payload would deliver from `sourcePath`'s recent history; appends nothing (protocol §23). */
  previewSubscription(sourcePath: string, body: PreviewSubscriptionBody, options?: Signal): Promise<PreviewSubscriptionResponse>;
}

export function subscriptionAdmin(http: HttpClient, base: string): SubscriptionAdminApi {
  const listSubscriptions = (o: ListSubscriptionsOptions = {}) =>
    http.json<SubscriptionListResponse>(
      'GET',
      apiUrl(base, '/v1/subscriptions', { status: o.status?.join(','), prefix: o.prefix, limit: o.limit, after: o.after }),
      { signal: o.signal },
    );
  return {
    listSubscriptions,
    async *listAllSubscriptions(o = {}) {
      let after: string | undefined;
      for (;;) {
        const page = await listSubscriptions({ ...o, after });
        yield* page.subscriptions;
        if (page.next === undefined) return;
        after = page.next;
      }
    },
    deliveryAttempts: (sourcePath, subscriptionKey, o = {}) =>
      http.json<DeliveryAttemptsResponse>('GET', streamUrl(base, sourcePath, { method: 'deliveryAttempts', query: { subscriptionKey, limit: o.limit } }), {
        signal: o.signal,
      }),
    previewSubscription: (sourcePath, body, o = {}) =>
      http.json<PreviewSubscriptionResponse>('POST', streamUrl(base, sourcePath, { method: 'previewSubscription' }), { body, signal: o.signal }),
  };
}
