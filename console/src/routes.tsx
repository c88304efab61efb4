import type { VNode } from 'preact';
import { useEffect } from 'preact/hooks';
import { BASE } from './router.ts';
import { ErrorNotice } from './components/notice.tsx';
import { Page } from './components/page.tsx';
import { InboundPage, InboundListPage } from './pages/inbound.tsx';
import { MyOrdersPage } from './pages/my-orders.tsx';
import { OrderPage } from './pages/order.tsx';
import { OrdersPage } from './pages/orders.tsx';
import { ProductsPage } from './pages/products.tsx';
import { NewProductPage } from './pages/product-new.tsx';
import { OverviewPage } from './pages/overview.tsx';
import { EventTypesPage } from './pages/event-types.tsx';
import { MessagePage } from './pages/message.tsx';
import { SubscriptionPage } from './pages/subscription.tsx';
import { UsersPage } from './pages/users.tsx';
import { WebhooksPage } from './pages/webhooks.tsx';
import type { Me } from './types.ts';

type Route = [pattern: RegExp, render: (m: RegExpExecArray) => VNode, who: 'staff' | 'user'];

/**
 * The console's pages by address. Staff pages are neither linked nor shown for other users; that is
 * for their convenience only: the API refuses their token on every staff route all the same.
 */
const ROUTES: Route[] = [
  [/^\/overview$/, () => <OverviewPage />, 'staff'],
  [/^\/orders$/, () => <OrdersPage />, 'staff'],
  [/^\/orders\/(\d+)$/, (m) => <OrderPage id={Number(m[1])} />, 'user'],
  [/^\/my-orders$/, () => <MyOrdersPage />, 'user'],
  [/^\/inbound-webhooks$/, () => <InboundListPage />, 'staff'],
  [/^\/inbound-webhooks\/(\d+)$/, (m) => <InboundPage id={Number(m[1])} />, 'staff'],
  [/^\/users$/, () => <UsersPage />, 'staff'],
  [/^\/products$/, () => <ProductsPage />, 'staff'],
  [/^\/products\/new$/, () => <NewProductPage />, 'staff'],
  [/^\/webhooks$/, () => <WebhooksPage />, 'user'],
  [/^\/webhooks\/event-types$/, () => <EventTypesPage />, 'user'],
  [/^\/webhooks\/(\d+)$/, (m) => <SubscriptionPage id={Number(m[1])} />, 'user'],
  [/^\/webhooks\/(\d+)\/messages\/(msg_[A-Za-z0-9_]+)$/, (m) => <MessagePage subscriptionId={Number(m[1])} messageId={m[2]} />, 'user'],
];

/** The page at `url` for `me`; the console's own root goes to the user's home (`redirect`). */
export function pageFor(url: URL, me: Me, redirect: (to?: string) => void): VNode {
  const path = url.pathname.slice(BASE.length).replace(/\/$/, '');
  if (path === '') return <Redirect go={redirect} />;
  for (const [pattern, render, who] of ROUTES) {
    const m = pattern.exec(path);
    if (!m) continue;
    if (who === 'staff' && !me.is_admin) {
      return (
        <Page title="Staff only">
          <ErrorNotice message="Only staff (administrators) may see this page. Your pages are Webhooks and My orders." />
        </Page>
      );
    }
    return render(m);
  }
  return (
    <Page title="Page not found">
      <p>There is no such page in the console. Choose one in the navigation.</p>
    </Page>
  );
}

function Redirect({ go }: { go: () => void }) {
  useEffect(() => go(), []);
  return <p class="loading">Loading…</p>;
}
