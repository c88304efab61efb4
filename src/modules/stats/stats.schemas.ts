import { Type, type Static } from 'typebox';
import { Timestamp } from '../../http/common.schemas.ts';

export const StatsQuery = Type.Object({
  bucket: Type.Union([Type.Literal('hour'), Type.Literal('day')], {
    default: 'hour',
    description: 'the width of each bucket; buckets start at whole UTC hours or days',
  }),
  from: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'the start, rounded down to its bucket; default `to` − 24 hours (`hour`) or − 30 days (`day`)',
    }),
  ),
  to: Type.Optional(Type.String({ format: 'date-time', description: 'the end, rounded up to the end of its bucket; default now' })),
});
export type StatsQuery = Static<typeof StatsQuery>;

const Start = { ...Timestamp, description: "the bucket's start (UTC)" };
const Count = Type.Integer({ minimum: 0 });

export const Stats = Type.Object(
  {
    from: { ...Timestamp, description: "the first bucket's start" },
    to: { ...Timestamp, description: "the last bucket's end" },
    bucket: Type.Union([Type.Literal('hour'), Type.Literal('day')]),
    currency: Type.String({ description: 'the ISO 4217 code of every amount (the `CURRENCY` setting)', examples: ['USD'] }),
    orders: Type.Array(
      Type.Object({ start: Start, pending: Count, processing: Count, completed: Count, failed: Count, cancelled: Count }),
      { description: 'the orders created in each bucket, by their status now; every bucket, oldest first' },
    ),
    revenue: Type.Array(
      Type.Object({ start: Start, amount: Type.String({ description: 'decimal, two places', examples: ['123.45'] }) }),
      { description: "the completed orders' totals per bucket of their creation; every bucket, oldest first" },
    ),
    short_products: Type.Array(
      Type.Object({
        product_id: Type.Integer(),
        sku: Type.String(),
        name: Type.String(),
        failed_orders: Type.Integer({ description: 'orders created in the range that failed with this product short' }),
      }),
      { description: 'the 10 products most often short in orders that failed for want of stock, most first' },
    ),
    inbound_webhooks: Type.Array(Type.Object({ status: Type.Union([Type.Literal('received'), Type.Literal('processed'), Type.Literal('failed')]), count: Count }), {
      description: "the platform's webhooks received in the range, by their status now",
    }),
    deliveries: Type.Array(Type.Object({ start: Start, succeeded: Count, failed: Count }), {
      description: 'the outgoing delivery attempts (to every subscription) per bucket, by outcome; every bucket, oldest first',
    }),
  },
  { description: 'The figures of the overview, over whole UTC buckets' },
);
export type Stats = Static<typeof Stats>;
