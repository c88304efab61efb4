import { ok, type Api } from '../api.ts';
import { FilterForm, queryValues } from '../components/filter-form.tsx';
import { ErrorNotice } from '../components/notice.tsx';
import { ORDER_STATUSES, OrdersTable, statusOf } from '../components/orders-table.tsx';
import { Page } from '../components/page.tsx';
import { Pager } from '../components/pager.tsx';
import { href, navigate, pageOf, useLocation } from '../router.ts';
import { useSession } from '../session.ts';
import { showToast } from '../components/toast.tsx';
import { useAction, useData } from '../use-data.ts';

const FILTERS = ['q', 'status', 'customer_email', 'created_from', 'created_to'] as const;
const PAGE_SIZE = 20;

type Filters = Record<(typeof FILTERS)[number], string>;

/** The list's filters as the API takes them (empty ones left out). */
const filterQuery = (f: Filters) => ({
  q: f.q.trim() || undefined,
  status: statusOf(f.status),
  customer_email: f.customer_email || undefined,
  created_from: f.created_from || undefined,
  created_to: f.created_to || undefined,
});

/** The export's address with the list's filters (what the Export CSV link points at). */
function exportHref(filters: Filters): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(filterQuery(filters))) if (v !== undefined) params.set(k, v);
  const search = params.toString();
  return `/api/v2/admin/orders/export${search ? `?${search}` : ''}`;
}

/**
 * The filtered list as CSV, saved under the name the service gives it. The export needs the bearer
 * token, which following a plain link cannot send: the link's click fetches it with the token, and
 * the file is handed to the browser to save.
 */
async function exportCsv(api: Api, filters: Filters): Promise<string> {
  const call = api.GET('/api/v2/admin/orders/export', { params: { query: filterQuery(filters) }, parseAs: 'blob' });
  const csv = await ok(call);
  const name = /filename="([^"]+)"/.exec((await call).response.headers.get('content-disposition') ?? '')?.[1] ?? 'orders.csv';
  const url = URL.createObjectURL(csv);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.click();
  // the browser has the file once the click is handled
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return name;
}

/** Staff: every user's orders, newest first, filtered and paged by the API. */
export function OrdersPage() {
  const { api } = useSession();
  const url = useLocation();
  const filters = queryValues(url, FILTERS) as Filters;
  const page = pageOf(url);
  // new orders and status changes show without a reload
  const orders = useData(() => ok(api.GET('/api/v2/admin/orders', { params: { query: { page, page_size: PAGE_SIZE, ...filterQuery(filters) } } })), [url.search], {
    live: true,
  });
  const go = (values: Record<string, string>, p = 1) => navigate(href('/orders', { ...values, page: p > 1 ? p : undefined }));
  const exporting = useAction();
  const download = () =>
    exporting.run(async () => {
      const name = await exportCsv(api, filters);
      showToast(`The orders are exported: ${name}.`);
      return undefined;
    });

  return (
    <Page title="Orders">
      <FilterForm
        label="Filter orders"
        values={filters}
        onApply={(v) => go(v)}
        fields={[
          { name: 'q', label: 'Search orders', type: 'search' },
          { name: 'status', label: 'Status', type: 'select', options: ORDER_STATUSES },
          { name: 'customer_email', label: 'Customer e-mail', type: 'email' },
          { name: 'created_from', label: 'Created from', type: 'date' },
          { name: 'created_to', label: 'Created to', type: 'date' },
        ]}
      />
      <div class="actions">
        <a
          href={exportHref(filters)}
          aria-disabled={exporting.busy || undefined}
          onClick={(event) => {
            event.preventDefault();
            if (!exporting.busy) void download();
          }}
        >
          Export CSV
        </a>
      </div>
      <ErrorNotice message={orders.error ?? exporting.error} />
      {orders.data && (
        <>
          <OrdersTable rows={orders.data.items} staff />
          {orders.data.items.length === 0 && <p>No order matches {filters.q ? `“${filters.q}” and ` : ''}these filters.</p>}
          <Pager info={orders.data} noun="order" hrefOf={(p) => href('/orders', { ...filters, page: p })} />
        </>
      )}
    </Page>
  );
}
