import { ok } from '../api.ts';
import { FilterForm, queryValues } from '../components/filter-form.tsx';
import { ErrorNotice } from '../components/notice.tsx';
import { ORDER_STATUSES, OrdersTable, statusOf } from '../components/orders-table.tsx';
import { Page } from '../components/page.tsx';
import { Pager } from '../components/pager.tsx';
import { href, navigate, pageOf, useLocation } from '../router.ts';
import { useSession } from '../session.ts';
import { useData } from '../use-data.ts';

const PAGE_SIZE = 20;

/** The signed-in user's own orders, newest first, paged by the API. */
export function MyOrdersPage() {
  const { api } = useSession();
  const url = useLocation();
  const filters = queryValues(url, ['status']);
  const page = pageOf(url);
  const orders = useData(
    () => ok(api.GET('/api/v2/orders', { params: { query: { page, page_size: PAGE_SIZE, status: statusOf(filters.status) } } })),
    [url.search],
    // a new order and each status change show without a reload
    { live: true },
  );
  return (
    <Page title="My orders">
      <FilterForm
        label="Filter my orders"
        values={filters}
        onApply={(v) => navigate(href('/my-orders', v))}
        fields={[{ name: 'status', label: 'Status', type: 'select', options: ORDER_STATUSES }]}
      />
      <ErrorNotice message={orders.error} />
      {orders.data && (
        <>
          <OrdersTable rows={orders.data.items} staff={false} />
          {orders.data.items.length === 0 && <p>You have no orders{filters.status ? ' with this status' : ''}.</p>}
          <Pager info={orders.data} noun="order" hrefOf={(p) => href('/my-orders', { ...filters, page: p })} />
        </>
      )}
    </Page>
  );
}
