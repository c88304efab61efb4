import { plural } from '../format.ts';
import { ColumnChart } from './charts.tsx';

const hourTick = new Intl.DateTimeFormat(undefined, { hour: 'numeric' });
const hourFull = new Intl.DateTimeFormat(undefined, { weekday: 'short', hour: 'numeric', minute: '2-digit' });
const dayFull = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });

export interface DeliveryBucket {
  start: string;
  succeeded: number;
  failed: number;
}

/**
 * Delivery attempts per hour or day, succeeded and failed stacked, with the success rate of the
 * range in words (`scope` says whose attempts and when: "to this subscription in the last 24 hours").
 */
export function DeliverySuccessChart({ title, buckets, bucket, scope }: { title: string; buckets: DeliveryBucket[]; bucket: 'hour' | 'day'; scope: string }) {
  const succeeded = buckets.reduce((n, b) => n + b.succeeded, 0);
  const attempts = succeeded + buckets.reduce((n, b) => n + b.failed, 0);
  const full = bucket === 'hour' ? hourFull : dayFull;
  const tick = bucket === 'hour' ? hourTick : dayFull;
  return (
    <ColumnChart
      title={title}
      summary={
        attempts === 0
          ? `No delivery attempt ${scope}.`
          : `${((100 * succeeded) / attempts).toFixed(1)}% of ${plural(attempts, 'delivery attempt')} ${scope} succeeded.`
      }
      labels={buckets.map((b) => full.format(new Date(b.start)))}
      tick={(i) => tick.format(new Date(buckets[i].start))}
      series={[
        { name: 'Succeeded', tone: 'series-completed', values: buckets.map((b) => b.succeeded) },
        { name: 'Failed', tone: 'series-failed', values: buckets.map((b) => b.failed) },
      ]}
      labelEvery={bucket === 'hour' ? 4 : 7}
    />
  );
}
