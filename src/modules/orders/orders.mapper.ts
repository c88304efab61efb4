import type { OrderEventRow, OrderRow } from '../../db/schema.ts';
import { iso } from '../../http/common.schemas.ts';
import { moneyToNumber } from '../products/money.ts';
import type { OrderLineView } from './orders.repository.ts';
import type { FailureDetails } from './order-lifecycle.ts';
import type { OrderCreated } from './orders.schemas.ts';

/** The 201 of POST /orders: the order as just created (pending, nothing priced yet). */
export function toOrderCreated(o: OrderRow, lines: { productId: number; quantity: number }[]): OrderCreated {
  return {
    id: o.id,
    user_id: o.user_id,
    status: o.status,
    total_amount: moneyToNumber(o.total_amount),
    items: lines.map((l) => ({ product_id: l.productId, quantity: l.quantity, unit_price: 0 })),
    created_at: iso(o.created_at),
  };
}

export function toOrderSummary(o: OrderRow) {
  return {
    id: o.id,
    user_id: o.user_id,
    status: o.status,
    total_amount: moneyToNumber(o.total_amount),
    created_at: iso(o.created_at),
    updated_at: iso(o.updated_at),
  };
}

export function toOrderDetail(o: OrderRow, lines: OrderLineView[]) {
  return {
    id: o.id,
    user_id: o.user_id,
    status: o.status,
    total_amount: moneyToNumber(o.total_amount),
    shipping_address: o.shipping_address,
    items: lines.map((l) => ({
      id: l.id,
      product_id: l.product_id,
      product_name: l.product_name,
      quantity: l.quantity,
      unit_price: moneyToNumber(l.unit_price),
    })),
    created_at: iso(o.created_at),
    updated_at: iso(o.updated_at),
  };
}

export function toOrderEvent(e: OrderEventRow) {
  return {
    sequence: e.sequence,
    type: e.type,
    previous_status: e.previous_status,
    status: e.status,
    reason: e.status === 'failed' ? e.reason : null,
    details: e.status === 'failed' ? ((e.details as FailureDetails | null) ?? null) : null,
    created_at: iso(e.created_at),
  };
}

/** The origin of an order in the API's words: every inbound platform is `platform`. */
function sourceOf(o: OrderRow): 'api' | 'platform' {
  return o.source === 'api' ? 'api' : 'platform';
}

function adminFields(o: OrderRow) {
  return {
    source: sourceOf(o),
    external_id: o.external_id,
    failure_reason: o.status === 'failed' ? o.failure_reason : null,
  };
}

export function toAdminOrderSummary(o: OrderRow) {
  return { ...toOrderSummary(o), ...adminFields(o) };
}

export function toAdminOrderDetail(o: OrderRow, lines: OrderLineView[], events: OrderEventRow[]) {
  return { ...toOrderDetail(o, lines), ...adminFields(o), events: events.map(toOrderEvent) };
}
