/** Names for the API's bodies, taken from the generated types, so they follow the OpenAPI document. */
import type { V2Paths as paths } from '../../clients/typescript/client.ts';

type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : never;

/** The 200 body of GET `P`. */
export type Read<P extends keyof paths> = paths[P] extends { get: { responses: { 200: infer R } } } ? JsonOf<R> : never;

export type Me = Read<'/api/v2/auth/me'>;
export type AdminOrderPage = Read<'/api/v2/admin/orders'>;
export type OrderTrace = Read<'/api/v2/admin/orders/{order_id}/trace'>;
export type OrderDetail = Read<'/api/v2/orders/{order_id}'>;
export type OrderEvent = Read<'/api/v2/orders/{order_id}/events'>[number];
export type InboundDetail = Read<'/api/v2/admin/inbound-webhooks/{id}'>;
export type Subscription = Read<'/api/v2/webhooks/subscriptions/{subscription_id}'>;
export type Delivery = Read<'/api/v2/webhooks/subscriptions/{subscription_id}/deliveries'>['items'][number];
export type Product = Read<'/api/v2/products/{product_id}'>;
export type Stats = Read<'/api/v2/admin/stats'>;

type JsonBody<R> = R extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
export type SubscriptionCreateBody = JsonBody<paths['/api/v2/webhooks/subscriptions']['post']>;
export type EventKind = SubscriptionCreateBody['events'][number];
