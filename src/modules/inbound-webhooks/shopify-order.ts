import { Type, type Static, type TProperties } from 'typebox';
import type { Validator } from 'typebox/compile';
import { MAX_ORDER_LINES as MAX_LINES } from '../orders/orders.schemas.ts';
import { MAX_QUANTITY } from '../orders/orders.service.ts';

/** The source value of orders created from the platform's webhooks. */
export const SHOPIFY_SOURCE = 'shopify';

const OptionalText = Type.Optional(Type.Union([Type.String(), Type.Null()]));

/** The part of an orders/create payload the service uses; everything else is kept in the raw body only. */
export const ShopifyOrderPayload = Type.Object({
  id: Type.Union([Type.Integer({ minimum: 1 }), Type.String({ minLength: 1, maxLength: 64, pattern: '^\\S+$' })]),
  email: OptionalText,
  contact_email: OptionalText,
  customer: Type.Optional(
    Type.Union([Type.Object({ email: OptionalText, first_name: OptionalText, last_name: OptionalText }), Type.Null()]),
  ),
  shipping_address: Type.Optional(
    Type.Union([
      Type.Object({
        name: OptionalText,
        first_name: OptionalText,
        last_name: OptionalText,
        address1: OptionalText,
        address2: OptionalText,
        city: OptionalText,
        province_code: OptionalText,
        province: OptionalText,
        zip: OptionalText,
        country_code: OptionalText,
        country: OptionalText,
      }),
      Type.Null(),
    ]),
  ),
  line_items: Type.Array(
    Type.Object({
      sku: OptionalText,
      title: OptionalText,
      quantity: Type.Integer({ minimum: 1 }),
    }),
    { minItems: 1 },
  ),
});
type ShopifyOrderPayload = Static<typeof ShopifyOrderPayload>;

/** A payload the service cannot turn into an order: recorded on the stored event, never retried. */
export class InboundRejection extends Error {
  override name = 'InboundRejection';
}

function text(v: string | null | undefined): string {
  return (v ?? '').trim();
}

function formatAddress(a: NonNullable<ShopifyOrderPayload['shipping_address']>): string {
  const name = text(a.name) || [text(a.first_name), text(a.last_name)].filter(Boolean).join(' ');
  const region = [text(a.province_code) || text(a.province), text(a.zip)].filter(Boolean).join(' ');
  return [name, text(a.address1), text(a.address2), text(a.city), region, text(a.country_code) || text(a.country)]
    .filter(Boolean)
    .join(', ');
}

let checkers: { order: Validator<TProperties, typeof ShopifyOrderPayload>; cancellation: Validator<TProperties, typeof ShopifyCancellationPayload> } | undefined;

/** The payloads' checks, compiled once (the value checker is far slower) by a worker before its first job; an API process never loads the compiler. */
export async function loadPayloadChecker(): Promise<NonNullable<typeof checkers>> {
  if (checkers === undefined) {
    const { Compile } = await import('typebox/compile');
    checkers ??= { order: Compile(ShopifyOrderPayload), cancellation: Compile(ShopifyCancellationPayload) };
  }
  return checkers;
}

/** Checks a payload's shape (`what` names it in the reason) and its id's range; a refusal is an InboundRejection. */
function check<T extends { id: number | string }>(checker: Validator, what: string, payload: unknown): T {
  if (!checker.Check(payload)) {
    const first = checker.Errors(payload)[0];
    throw new InboundRejection(`invalid ${what} payload: ${first ? `${first.instancePath || '/'} ${first.message}` : 'unexpected shape'}`);
  }
  const p = payload as T;
  if (typeof p.id === 'number' && !Number.isSafeInteger(p.id)) throw new InboundRejection(`invalid ${what} payload: /id is out of range`);
  return p;
}

/** Validates the payload's shape and maps it onto what an order needs (products are looked up later). */
export async function mapShopifyOrder(payload: unknown) {
  const p = check<ShopifyOrderPayload>((checkers ?? (await loadPayloadChecker())).order, 'order', payload);
  const email = text(p.email) || text(p.contact_email) || text(p.customer?.email);
  if (!email) throw new InboundRejection('order has no customer e-mail');
  if (email.length > 254 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) throw new InboundRejection(`invalid customer e-mail: ${email.slice(0, 254)}`);

  if (p.line_items.length > MAX_LINES) throw new InboundRejection(`order has more than ${MAX_LINES} line items`);
  const quantities = new Map<string, number>();
  p.line_items.forEach((line, i) => {
    const sku = text(line.sku);
    if (!sku) throw new InboundRejection(`line item ${i + 1}${line.title ? ` (${line.title})` : ''} has no SKU`);
    quantities.set(sku, (quantities.get(sku) ?? 0) + line.quantity);
  });
  for (const [sku, quantity] of quantities) {
    if (quantity > MAX_QUANTITY) throw new InboundRejection(`quantity of SKU ${sku} exceeds ${MAX_QUANTITY}`);
  }

  const fullName =
    [text(p.customer?.first_name), text(p.customer?.last_name)].filter(Boolean).join(' ') || email.split('@')[0] || 'Customer';
  const address = p.shipping_address ? formatAddress(p.shipping_address) : '';
  return {
    externalId: String(p.id),
    email,
    customerName: fullName.slice(0, 100),
    // orders need a shipping address; a digital order without one still becomes an order
    shippingAddress: (address || 'No shipping address provided').slice(0, 500),
    // quantities per SKU, lines of one SKU merged
    lines: [...quantities].map(([sku, quantity]) => ({ sku, quantity })),
  };
}

/** The part of an orders/cancelled payload the service uses: which order, and why. */
export const ShopifyCancellationPayload = Type.Object({
  id: ShopifyOrderPayload.properties.id,
  cancel_reason: OptionalText,
});

/** Validates an orders/cancelled payload (the cancelled order, as the platform sends it) and maps it. */
export async function mapShopifyCancellation(payload: unknown) {
  const p = check<Static<typeof ShopifyCancellationPayload>>((checkers ?? (await loadPayloadChecker())).cancellation, 'cancellation', payload);
  // the platform's reason (`customer`, `fraud`, `inventory`, `declined`, `other`), null when it gave none
  const reason = text(p.cancel_reason);
  return { externalId: String(p.id), reason: reason === '' ? null : reason.slice(0, 500) };
}
