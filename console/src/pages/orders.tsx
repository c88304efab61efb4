import { ok } from '../api.ts';
import { FilterForm, queryValues } from '../components/filter-form.tsx';
import { ErrorNotice } from '../components/notice.tsx';
import { ORDER_STATUSES, OrdersTable, statusOf } from '../components/orders-table.tsx';
import { Page } from '../components/page.tsx';
import { Pager } from '../components/pager.tsx';
import { href, navigate, pageOf, useLocation } from '../router.ts';
import { useSession } from '../session.ts';
import { useData } from '../use-data.ts';

const FILTERS = ['status', 'customer_email', 'created_from', 'created_to'] as const;
const PAGE_SIZE = 20;

/** Staff: every user's orders, newest first, filtered and paged by the API. */
export function OrdersPage() {
  const { api } = useSession();
  const url = useLocation();
  const filters = queryValues(url, FILTERS);
  const page = pageOf(url);
  const orders = useData(
    () =>
      ok(
        api.GET('/api/v2/admin/orders', {
          params: {
            query: {
              page,
              page_size: PAGE_SIZE,
              status: statusOf(filters.status),
              customer_email: filters.customer_email || undefined,
              created_from: filters.created_from || undefined,
              created_to: filters.created_to || undefined,
            },
          },
        }),
      ),
    [url.search],
  );
  const go = (values: Record<string, string>, p = 1) => navigate(href('/orders', { ...values, page: p > 1 ? p : undefined }));

  return (
    <Page title="Orders">
      <FilterForm
        label="Filter orders"
        values={filters}
        onApply={(v) => go(v)}
        fields={[
          { name: 'status', label: 'Status', type: 'select', options: ORDER_STATUSES },
          { name: 'customer_email', label: 'Customer e-mail', type: 'email' },
          { name: 'created_from', label: 'Created from', type: 'date' },
          { name: 'created_to', label: 'Created to', type: 'date' },
        ]}
      />
      <ErrorNotice message={orders.error} />
      {orders.data && (
        <>
          <OrdersTable rows={orders.data.items} staff />
          {orders.data.items.length === 0 && <p>No order matches these filters.</p>}
          <Pager info={orders.data} noun="order" hrefOf={(p) => href('/orders', { ...filters, page: p })} />
        </>
      )}
    </Page>
  );
}
