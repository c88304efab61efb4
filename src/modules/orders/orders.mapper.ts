import type { OrderRow } from '../../db/schema.ts';
import { iso } from '../../http/common.schemas.ts';
import { moneyToNumber } from '../products/money.ts';
import type { OrderLineView } from './orders.repository.ts';
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
