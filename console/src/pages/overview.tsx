import { ok, type Api } from '../api.ts';
import { BarList, ColumnChart, type Series } from '../components/charts.tsx';
import { DeliverySuccessChart } from '../components/delivery-success.tsx';
import { ErrorNotice } from '../components/notice.tsx';
import { ORDER_STATUSES } from '../components/orders-table.tsx';
import { Page } from '../components/page.tsx';
import { label, money, plural } from '../format.ts';
import { href } from '../router.ts';
import { useSession } from '../session.ts';
import type { Stats } from '../types.ts';
import { useData } from '../use-data.ts';

const hourTick = new Intl.DateTimeFormat(undefined, { hour: 'numeric' });
const hourFull = new Intl.DateTimeFormat(undefined, { weekday: 'short', hour: 'numeric', minute: '2-digit' });
const dayFull = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });

const stats = (api: Api, bucket: 'hour' | 'day') => ok(api.GET('/api/v2/admin/stats', { params: { query: { bucket } } }));

/** The orders of each bucket, one series per status. */
function orderSeries(s: Stats): Series[] {
  return ORDER_STATUSES.map((status) => ({ name: label(status), tone: `series-${status}`, values: s.orders.map((b) => b[status]) }));
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/** Staff: how the shop is doing at a glance, from GET /admin/stats (the last 24 hours by hour, the last 30 days by day). */
export function OverviewPage() {
  const { api } = useSession();
  // both follow the order events: a new or changed order shows in the charts without a reload
  const hourly = useData(() => stats(api, 'hour'), [], { live: true });
  const daily = useData(() => stats(api, 'day'), [], { live: true });
  const h = hourly.data;
  const d = daily.data;

  return (
    <Page title="Overview">
      <ErrorNotice message={hourly.error ?? daily.error} />
      {h && d && <Glance hourly={h} daily={d} />}
      <div class="charts">
        {h && (
          <ColumnChart
            title="Orders per hour"
            summary={`${plural(sum(h.orders.map((b) => sum(ORDER_STATUSES.map((st) => b[st])))), 'order')} in the last 24 hours, by their status now.`}
            labels={h.orders.map((b) => hourFull.format(new Date(b.start)))}
            tick={(i) => hourTick.format(new Date(h.orders[i].start))}
            series={orderSeries(h)}
            labelEvery={4}
          />
        )}
        {d && (
          <>
            <ColumnChart
              title="Orders per day"
              summary={`${plural(sum(d.orders.map((b) => sum(ORDER_STATUSES.map((st) => b[st])))), 'order')} in the last 30 days.`}
              labels={d.orders.map((b) => dayFull.format(new Date(b.start)))}
              tick={(i) => dayFull.format(new Date(d.orders[i].start))}
              series={orderSeries(d)}
              labelEvery={7}
            />
            <ColumnChart
              title="Revenue per day"
              summary={`${money(sum(d.revenue.map((b) => Number(b.amount))))} from completed orders in the last 30 days.`}
              labels={d.revenue.map((b) => dayFull.format(new Date(b.start)))}
              tick={(i) => dayFull.format(new Date(d.revenue[i].start))}
              series={[{ name: 'Revenue', tone: 'series-revenue', values: d.revenue.map((b) => Number(b.amount)) }]}
              format={(n) => money(n)}
              labelEvery={7}
            />
            <DeliverySuccessChart title="Delivery success rate" buckets={d.deliveries} bucket="day" scope="to subscribers in the last 30 days" />
            <BarList
              title="Products most often short"
              summary="Products named as short in orders that failed for want of stock, last 30 days."
              unit="Failed orders"
              empty="No order failed for want of stock."
              rows={d.short_products.map((p) => ({ label: `${p.name} (${p.sku})`, value: p.failed_orders, tone: 'series-failed' }))}
            />
            <BarList
              title="Inbound webhook outcomes"
              summary={
                <>
                  The platform's webhooks received in the last 30 days, by their state now. <a href={href('/inbound-webhooks', { status: 'failed' })}>Failed webhooks</a>
                </>
              }
              unit="Webhooks"
              empty="No platform webhook received."
              rows={d.inbound_webhooks.map((w) => ({ label: label(w.status), value: w.count, tone: `series-${w.status}` }))}
            />
          </>
        )}
      </div>
      {(!h || !d) && !hourly.error && !daily.error && <p class="loading">Loading…</p>}
    </Page>
  );
}

/** The figures an operator looks for first. */
function Glance({ hourly, daily }: { hourly: Stats; daily: Stats }) {
  const count = (s: Stats, status: (typeof ORDER_STATUSES)[number]) => sum(s.orders.map((b) => b[status]));
  const all = sum(ORDER_STATUSES.map((st) => count(hourly, st)));
  const failed = count(hourly, 'failed');
  const revenue = sum(hourly.revenue.map((b) => Number(b.amount)));
  const inboundFailed = daily.inbound_webhooks.find((w) => w.status === 'failed')?.count ?? 0;
  return (
    <dl class="glance">
      <div>
        <dt>Orders, last 24 hours</dt>
        <dd>{all}</dd>
      </div>
      <div>
        <dt>Failed, last 24 hours</dt>
        <dd>
          <a href={href('/orders', { status: 'failed' })}>{failed}</a>
        </dd>
      </div>
      <div>
        <dt>Revenue, last 24 hours</dt>
        <dd>{money(revenue)}</dd>
      </div>
      <div>
        <dt>Failed platform webhooks, 30 days</dt>
        <dd>
          <a href={href('/inbound-webhooks', { status: 'failed' })}>{inboundFailed}</a>
        </dd>
      </div>
    </dl>
  );
}
