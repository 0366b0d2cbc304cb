/**
 * The order-totals processor: per-customer order counts and totals, folded from a shop's order
 * stream. Its state is always the fold of the stream's `order-placed` and `order-refunded` events;
 * the processor host stores it with its checkpoint, so a restart resumes exactly.
 */
import { defineProcessor, type CommittedEvent } from '@rivulet/client';

export const ORDER_PLACED = 'shop.example/order-placed';
export const ORDER_REFUNDED = 'shop.example/order-refunded';
export const CUSTOMER_BECAME_VIP = 'shop.example/customer-became-vip';

/** Totals in cents, per customer id. */
export interface OrderTotals {
  customers: Record<string, { orders: number; totalCents: number }>;
}

/** A customer whose total reaches this becomes a VIP (onEvent announces it on /shop/vip). */
export const VIP_CENTS = 100_000;

function orderOf(event: CommittedEvent): { customerId: string; amountCents: number } | undefined {
  const { customerId, amountCents } = event.payload ?? {};
  if (typeof customerId !== 'string' || typeof amountCents !== 'number' || !Number.isInteger(amountCents)) return undefined;
  return { customerId, amountCents };
}

export const orderTotals = defineProcessor<OrderTotals>({
  slug: 'order-totals',
  initialState: { customers: {} },

  // Deterministic: depends on nothing but the state and the event.
  reduce(state, event) {
    const order = orderOf(event);
    if (!order) return state; // a malformed order changes nothing (and is not retried forever)
    const customer = (state.customers[order.customerId] ??= { orders: 0, totalCents: 0 });
    if (event.type === ORDER_PLACED) {
      customer.orders += 1;
      customer.totalCents += order.amountCents;
    } else if (event.type === ORDER_REFUNDED) {
      customer.totalCents -= order.amountCents;
    }
    return state;
  },

  // Side effects run before the commit and may run again after a crash: the idempotency key,
  // derived from (streamId, offset), makes the announcement appear once whatever happens.
  async onEvent({ event, previousState, state, stream, itx }) {
    const order = orderOf(event);
    if (!order) return;
    const before = previousState.customers[order.customerId]?.totalCents ?? 0;
    const after = state.customers[order.customerId]?.totalCents ?? 0;
    if (before < VIP_CENTS && after >= VIP_CENTS) {
      await itx.streams.get('/shop/vip').append({
        type: CUSTOMER_BECAME_VIP,
        payload: { customerId: order.customerId, totalCents: after },
        idempotencyKey: `vip:${stream.streamId}:${event.offset}`,
      });
    }
  },
});
