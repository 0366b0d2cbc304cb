/**
 * The order-totals demo against a running server: host the processor, subscribe it to
 * /shop/orders, append a few orders, and wait until the processor has folded them.
 * Everything it appends carries an idempotency key, so running it again appends nothing new and
 * the totals stay the same (the processor resumes from its stored checkpoint).
 */
import { connect, type ItxConnection } from '@rivulet/client';
import { serveProcessors, type ServedProcessors } from '@rivulet/client/processor-host';
import { ORDER_PLACED, ORDER_REFUNDED, CUSTOMER_BECAME_VIP, orderTotals, type OrderTotals } from './order-totals.js';

export const ORDERS = '/shop/orders';
export const SUBSCRIPTION_KEY = 'order-totals';
/** The name the processor host registers under (`processors.get("shop")`). */
export const HOST_NAME = 'shop';

export interface DemoOptions {
  url: string;
  token?: string | undefined;
  projectId?: string | undefined;
  /** The processor host's SQLite file. */
  dbPath: string;
  /** Keep hosting after the demo (until stop() of the answer). */
  keepServing?: boolean;
  log?: (line: string) => void;
  timeoutMs?: number;
}

export interface DemoResult {
  totals: OrderTotals;
  checkpoint: number;
  vip: string[];
  /** Stops hosting (only needed with keepServing). */
  stop(): Promise<void>;
}

const SAMPLE = [
  { key: 'order-1001', type: ORDER_PLACED, customerId: 'ada', amountCents: 4_200 },
  { key: 'order-1002', type: ORDER_PLACED, customerId: 'grace', amountCents: 99_000 },
  { key: 'order-1003', type: ORDER_PLACED, customerId: 'ada', amountCents: 1_800 },
  { key: 'refund-1001', type: ORDER_REFUNDED, customerId: 'ada', amountCents: 4_200 },
  { key: 'order-1004', type: ORDER_PLACED, customerId: 'grace', amountCents: 2_500 },
];

export async function runOrderTotalsDemo(options: DemoOptions): Promise<DemoResult> {
  const log = options.log ?? (() => undefined);
  const itx: ItxConnection = await connect(options.url, { token: options.token, projectId: options.projectId });
  let served: ServedProcessors | undefined;
  const stop = async () => {
    await served?.stop();
    itx.close();
  };
  try {
    served = serveProcessors(itx, HOST_NAME, [orderTotals], { dbPath: options.dbPath });
    await served.ready;
    log(`hosting processor "${orderTotals.slug}" as processors.get("${HOST_NAME}")`);

    const orders = itx.root.streams.get(ORDERS);
    // The subscription lives on the source stream; its idempotency key makes this a one-time append.
    await orders.append({
      type: 'events.iterate.com/stream/subscription-configured',
      idempotencyKey: 'order-totals/subscription:v1',
      payload: {
        subscriptionKey: SUBSCRIPTION_KEY,
        description: 'per-customer order totals',
        filter: { eventTypes: [ORDER_PLACED, ORDER_REFUNDED] },
        receiver: { action: 'processor-wake', expression: ['processors', ['get', HOST_NAME], 'wakeStreamProcessor'] },
      },
    });
    const committed = await orders.append(
      ...SAMPLE.map((o) => ({ type: o.type, idempotencyKey: o.key, payload: { customerId: o.customerId, amountCents: o.amountCents } })),
    );
    const last = committed[committed.length - 1]!.offset;
    log(`appended ${committed.length} orders to ${ORDERS} (offsets ${committed[0]!.offset}–${last})`);

    // The server wakes the host and feeds it one event per batch; wait until it folded the last one.
    const deadline = Date.now() + (options.timeoutMs ?? 10_000);
    for (;;) {
      const record = served.host.read<OrderTotals>({ path: ORDERS, subscriptionKey: SUBSCRIPTION_KEY, projectId: options.projectId ?? null });
      if (record && record.checkpoint >= last) {
        const vipEvents = (await itx.root.streams.get('/shop/vip').getEvents({ eventTypes: [CUSTOMER_BECAME_VIP] })).events;
        const vip = vipEvents.map((e) => String(e.payload?.customerId));
        log(`folded through offset ${record.checkpoint}`);
        for (const [customer, t] of Object.entries(record.state.customers)) {
          log(`  ${customer.padEnd(8)} ${String(t.orders).padStart(3)} orders  ${(t.totalCents / 100).toFixed(2).padStart(10)}`);
        }
        if (vip.length > 0) log(`VIP customers (from /shop/vip): ${vip.join(', ')}`);
        if (!options.keepServing) await stop();
        return { totals: record.state, checkpoint: record.checkpoint, vip, stop };
      }
      if (Date.now() > deadline) throw new Error(`the processor did not fold offset ${last} in time (stored checkpoint ${record?.checkpoint ?? 'none'})`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } catch (error) {
    await stop();
    throw error;
  }
}
