import { useState } from 'preact/hooks';
import { ok, type Api } from '../api.ts';
import { ConfirmDialog } from '../components/dialog.tsx';
import { Badge, ErrorNotice, Notice } from '../components/notice.tsx';
import { Page } from '../components/page.tsx';
import { money, reasonText } from '../format.ts';
import { useOrderEvents } from '../live.ts';
import { href } from '../router.ts';
import { useSession } from '../session.ts';
import { eventTimeline, traceTimeline, type Entry } from '../timeline.ts';
import type { OrderDetail } from '../types.ts';
import { useAction, useData, usePoll } from '../use-data.ts';
import { Head } from '../components/table.tsx';
import { When } from '../components/when.tsx';

/** Staff: how often the whole trace is read again (deliveries go on after the status change that caused them). */
const TRACE_MS = 9000;
const CANCELLABLE = ['pending', 'processing', 'completed'];

interface OrderView {
  order: OrderDetail;
  /** staff only: where the order came from */
  origin?: { source: string; external_id: string | null };
  timeline: Entry[];
}

async function staffView(api: Api, id: number): Promise<OrderView> {
  const trace = await ok(api.GET('/api/v2/admin/orders/{order_id}/trace', { params: { path: { order_id: id } } }));
  return { order: trace.order, origin: trace.order, timeline: traceTimeline(trace) };
}

async function ownerView(api: Api, id: number): Promise<OrderView> {
  const path = { params: { path: { order_id: id } } };
  const [order, events] = await Promise.all([ok(api.GET('/api/v2/orders/{order_id}', path)), ok(api.GET('/api/v2/orders/{order_id}/events', path))]);
  return { order, timeline: eventTimeline(events, order.items) };
}

/** An order: status (kept current), customer, lines, totals and its timeline; Cancel order where it can be. */
export function OrderPage({ id }: { id: number }) {
  const { api, me } = useSession();
  const staff = me.is_admin;
  const view = useData(() => (staff ? staffView(api, id) : ownerView(api, id)), [id, staff]);
  const order = view.data?.order;
  const customer = useData(
    async () => (staff && order ? ok(api.GET('/api/v2/users/{user_id}', { params: { path: { user_id: order.user_id } } })) : undefined),
    [staff, order?.user_id],
  );
  // The order's events (GET /events): the new status shows at once; the rest of the page follows
  // when it has been read again.
  const [fresh, setFresh] = useState<{ status: string; updated_at: string }>();
  useOrderEvents((e) => {
    if (!e) return void view.reload();
    if (e.order.id !== id) return;
    setFresh({ status: e.order.status, updated_at: e.order.updated_at });
    void view.reload();
  }, order !== undefined);
  usePoll(() => view.reload(), TRACE_MS, staff && order !== undefined);

  const [confirming, setConfirming] = useState(false);
  const [reason, setReason] = useState('');
  const action = useAction();
  const cancel = () =>
    action.run(async () => {
      const body = reason.trim() ? { reason: reason.trim() } : undefined;
      await ok(api.POST('/api/v2/orders/{order_id}/cancel', { params: { path: { order_id: id } }, body }));
      setConfirming(false);
      await view.reload();
      return `Order ${id} is cancelled.`;
    });

  const status = fresh && fresh.updated_at > (order?.updated_at ?? '') ? fresh.status : order?.status;

  return (
    <Page title={`Order ${id}`}>
      <ErrorNotice message={view.error} />
      <Notice>{action.notice}</Notice>
      {order && view.data && (
        <>
          <div class="order-head">
            <p role="status" aria-label="Order status" class="order-status">
              Status: <Badge value={status ?? order.status} />
            </p>
            {CANCELLABLE.includes(status ?? order.status) && (
              <button type="button" class="danger" onClick={() => setConfirming(true)}>
                Cancel order
              </button>
            )}
          </div>
          <dl class="facts">
            {staff && (
              <>
                <dt>Customer</dt>
                <dd>{customer.data ? `${customer.data.full_name} <${customer.data.email}>` : `user ${order.user_id}`}</dd>
                <dt>Source</dt>
                <dd>{view.data.origin?.source === 'platform' ? `Platform order ${view.data.origin.external_id ?? ''}` : 'Placed through the API'}</dd>
              </>
            )}
            <dt>Total</dt>
            <dd>{money(order.total_amount)}</dd>
            {order.failure_reason && (
              <>
                <dt>Why it failed</dt>
                <dd>{reasonText(order.failure_reason)}</dd>
              </>
            )}
            {order.cancelled_at && (
              <>
                <dt>Cancelled</dt>
                <dd>
                  <When at={order.cancelled_at} />
                </dd>
              </>
            )}
            <dt>Shipping address</dt>
            <dd>{order.shipping_address}</dd>
            <dt>Created</dt>
            <dd>
              <When at={order.created_at} />
            </dd>
            <dt>Updated</dt>
            <dd>
              <When at={order.updated_at} />
            </dd>
          </dl>
          <Lines order={order} />
          <Timeline entries={view.data.timeline} />
          <p>
            <a href={href(staff ? '/orders' : '/my-orders')}>{staff ? 'All orders' : 'My orders'}</a>
          </p>
        </>
      )}
      <ConfirmDialog
        open={confirming}
        title={`Cancel order ${id}?`}
        confirmLabel="Yes, cancel the order"
        keepLabel="Keep the order"
        busy={action.busy}
        onConfirm={() => void cancel()}
        onClose={() => setConfirming(false)}
      >
        <p>The order will not be fulfilled. If its stock was reserved, it goes back to the catalogue.</p>
        <label for="cancel-reason">Reason (optional)</label>
        <input id="cancel-reason" type="text" maxLength={500} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
        <ErrorNotice message={action.error} />
      </ConfirmDialog>
    </Page>
  );
}

function Lines({ order }: { order: OrderDetail }) {
  return (
    <>
      <h2 id="lines-title">Lines</h2>
      {/* focusable: at a narrow width it may scroll sideways, and it has no link to reach by keyboard */}
      <table aria-labelledby="lines-title" tabIndex={0}>
        <Head cols={['Product', ['Quantity', 'num'], ['Unit price', 'num'], ['Line total', 'num']]} />
        <tbody>
          {order.items.map((i) => (
            <tr key={i.id}>
              <td>{i.product_name}</td>
              <td class="num">{i.quantity}</td>
              <td class="num">{money(i.unit_price)}</td>
              <td class="num">{money(i.unit_price * i.quantity)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function Timeline({ entries }: { entries: Entry[] }) {
  return (
    <section aria-labelledby="timeline-title" class="timeline">
      <h2 id="timeline-title">Timeline</h2>
      <ol>
        {entries.map((e, i) => (
          <li key={i} class={`entry entry-${e.kind}${e.tone ? ` tone-${e.tone}` : ''}`}>
            <When at={e.at} />
            <strong>{e.title}</strong>
            {e.lines.length > 0 && (
              <ul>
                {e.lines.map((l, j) => (
                  <li key={j}>{typeof l === 'string' ? l : l.map((part, k) => (typeof part === 'string' ? part : <When key={k} at={part.at} />))}</li>
                ))}
              </ul>
            )}
          </li>
        ))}
      </ol>
    </section>
  );
}
