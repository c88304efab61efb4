import { useState } from 'preact/hooks';
import { ok } from '../api.ts';
import { Badge, ErrorNotice } from '../components/notice.tsx';
import { Page } from '../components/page.tsx';
import { Pager } from '../components/pager.tsx';
import { showToast } from '../components/toast.tsx';
import { When } from '../components/when.tsx';
import { SecretOnce, SubscriptionForm, type SubscriptionFields } from '../components/subscription-form.tsx';
import { href, pageOf, useLocation } from '../router.ts';
import { useSession } from '../session.ts';
import { useData } from '../use-data.ts';
import { Head } from '../components/table.tsx';

const PAGE_SIZE = 20;
const EMPTY: SubscriptionFields = { url: '', events: ['order.status_changed'], description: '' };

/** The signed-in user's webhook subscriptions, and a new one (its secret shown once). */
export function WebhooksPage() {
  const { api } = useSession();
  const url = useLocation();
  const page = pageOf(url);
  const subscriptions = useData(() => ok(api.GET('/api/v2/webhooks/subscriptions', { params: { query: { page, page_size: PAGE_SIZE } } })), [url.search]);
  const [created, setCreated] = useState<{ id: number; url: string; secret: string }>();
  const [formKey, setFormKey] = useState(0);

  const create = async (f: SubscriptionFields) => {
    const body = { url: f.url, events: f.events, description: f.description || null };
    const sub = await ok(api.POST('/api/v2/webhooks/subscriptions', { body }));
    setCreated({ id: sub.id, url: sub.url, secret: sub.secret });
    setFormKey((k) => k + 1);
    showToast(`Subscription ${sub.id} is created. Copy its signing secret now: it is not shown again.`);
    await subscriptions.reload();
  };

  return (
    <Page title="Webhooks">
      <p>
        Your subscriptions receive the events of your orders{' '}(an administrator's receive every order's), signed with their secret.{' '}
        <a href={href('/webhooks/event-types')}>Event types</a> shows each event's schema and a sample.
      </p>
      {created && (
        <SecretOnce
          secret={created.secret}
          note={`The subscription to ${created.url} signs its deliveries with this secret.`}
          onDismiss={() => setCreated(undefined)}
        />
      )}
      <ErrorNotice message={subscriptions.error} />
      {subscriptions.data && (
        <>
          <table aria-label="Subscriptions" tabIndex={0}>
            <Head cols={['Subscription', 'URL', 'Events', 'State', 'Created']} />
            <tbody>
              {subscriptions.data.items.map((s) => (
                <tr key={s.id}>
                  <td>
                    <a href={href(`/webhooks/${s.id}`)}>Subscription {s.id}</a>
                  </td>
                  <td class="wrap">{s.url}</td>
                  <td>{s.events.join(', ')}</td>
                  <td>
                    <Badge value={s.is_active ? 'enabled' : 'disabled'} />
                    {s.disabled_reason && <span> {s.disabled_reason}</span>}
                  </td>
                  <td>
                    <When at={s.created_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {subscriptions.data.items.length === 0 && <p>You have no subscription yet.</p>}
          <Pager info={subscriptions.data} noun="subscription" hrefOf={(p) => href('/webhooks', { page: p })} />
        </>
      )}
      <h2>New subscription</h2>
      <SubscriptionForm key={formKey} idPrefix="new" initial={EMPTY} submitLabel="Create subscription" onSave={create} />
    </Page>
  );
}
