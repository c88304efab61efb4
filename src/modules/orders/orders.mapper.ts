import type { OrderEventRow, OrderRow, OrderStatus } from '../../db/schema.ts';
import { statusIn, V1_CANCELLED_REASON } from '../../events/order-events.ts';
import type { ApiVersion } from '../../http/api-version.ts';
import { iso, isoOrNull } from '../../http/common.schemas.ts';
import type { OrderLineView } from './orders.reads.repository.ts';
import type { FailureDetails, OrderCreated } from './orders.schemas.ts';
import type { Customer } from '../users/customers.repository.ts';

/** The statuses a `version` client's status filter stands for: v1's `failed` includes the cancelled orders. */
export function statusesFor(version: ApiVersion, status: OrderStatus | undefined): OrderStatus[] | undefined {
  if (status === undefined) return undefined;
  return version === 'v1' && status === 'failed' ? ['failed', 'cancelled'] : [status];
}

/** Why the order failed, as `version` says it; null unless it reads `failed` there. */
function failureReasonIn(version: ApiVersion, o: OrderRow): string | null {
  if (o.status === 'failed') return o.failure_reason;
  return version === 'v1' && o.status === 'cancelled' ? V1_CANCELLED_REASON : null;
}

/** The fields every order read starts with. */
function head(version: ApiVersion, o: OrderRow) {
  return { id: o.id, user_id: o.user_id, status: statusIn(version, o.status), total_amount: Number(o.total_amount) };
}

/** The fields every order read ends with: what v2 adds, then the times. */
function tail(version: ApiVersion, o: OrderRow) {
  const v2 = version === 'v1' ? {} : { failure_reason: failureReasonIn(version, o), cancelled_at: isoOrNull(o.cancelled_at) };
  return { ...v2, created_at: iso(o.created_at), updated_at: iso(o.updated_at) };
}

/** The 201 of POST /orders: the order as just created (pending, nothing priced yet), the same in every version. */
export function toOrderCreated(o: OrderRow, lines: { productId: number; quantity: number }[]): OrderCreated {
  const items = lines.map((l) => ({ product_id: l.productId, quantity: l.quantity, unit_price: 0 }));
  return { ...(head('v1', o) as Omit<OrderCreated, 'items' | 'created_at'>), items, created_at: iso(o.created_at) };
}

export function toOrderSummary(version: ApiVersion, o: OrderRow) {
  return { ...head(version, o), ...tail(version, o) };
}

export function toOrderDetail(version: ApiVersion, o: OrderRow, lines: OrderLineView[]) {
  return {
    ...head(version, o),
    shipping_address: o.shipping_address,
    items: lines.map((l) => ({ ...l, unit_price: Number(l.unit_price) })),
    ...tail(version, o),
  };
}

/** Why the event's move happened, as `version` says it: a failure's reason, or (v2) a cancellation's. */
function eventReason(version: ApiVersion, e: OrderEventRow): string | null {
  if (e.status === 'failed') return e.reason;
  if (e.status === 'cancelled') return version === 'v1' ? V1_CANCELLED_REASON : e.reason;
  return null;
}

export function toOrderEvent(version: ApiVersion, e: OrderEventRow) {
  return {
    sequence: e.sequence,
    type: e.type,
    previous_status: e.previous_status === null ? null : statusIn(version, e.previous_status),
    status: statusIn(version, e.status),
    reason: eventReason(version, e),
    details: e.status === 'failed' ? ((e.details as FailureDetails | null) ?? null) : null,
    created_at: iso(e.created_at),
  };
}

/** What an administrator reads besides (v2's `tail` has `failure_reason` already; v1's has not). */
function adminFields(version: ApiVersion, o: OrderRow) {
  // every inbound platform is `platform` in the API's words
  return { source: o.source === 'api' ? 'api' : 'platform', external_id: o.external_id, failure_reason: failureReasonIn(version, o) };
}

/** A row of the administrators' list; v2's names its owner (`customer`). */
export function toAdminOrderSummary(version: ApiVersion, o: OrderRow, customer?: Customer) {
  const owner = version === 'v2' && customer !== undefined ? { customer } : {};
  return { ...toOrderSummary(version, o), ...adminFields(version, o), ...owner };
}

export const EXPORT_COLUMNS = [
  'id',
  'status',
  'total_amount',
  'currency',
  'customer_id',
  'customer_email',
  'customer_name',
  'source',
  'external_id',
  'failure_reason',
  'created_at',
  'updated_at',
] as const;

/** An order as a record of the v2 export, in EXPORT_COLUMNS' order: its total exact, as stored. */
export function toExportRecord(o: OrderRow, customer: Customer | undefined, currency: string): (string | number | null)[] {
  const read = toAdminOrderSummary('v2', o);
  return [o.id, read.status, o.total_amount, currency, o.user_id, customer?.email ?? null, customer?.name ?? null, read.source, o.external_id, read.failure_reason, read.created_at, read.updated_at];
}

export function toAdminOrderDetail(version: ApiVersion, o: OrderRow, lines: OrderLineView[], events: OrderEventRow[]) {
  return { ...toOrderDetail(version, o, lines), ...adminFields(version, o), events: events.map((e) => toOrderEvent(version, e)) };
}
