import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ok } from '../api.ts';
import { ConfirmDialog } from '../components/dialog.tsx';
import { DeliverySuccessChart } from '../components/delivery-success.tsx';
import { MESSAGE_EVENT_TYPES, MessageLog, type MessageEventType } from '../components/message-log.tsx';
import { Badge, ErrorNotice, Notice } from '../components/notice.tsx';
import { Page } from '../components/page.tsx';
import { SecretOnce, SubscriptionForm, type SubscriptionFields } from '../components/subscription-form.tsx';
import { showToast } from '../components/toast.tsx';
import { When } from '../components/when.tsx';
import { localInput } from '../format.ts';
import { href, navigate } from '../router.ts';
import { useSession } from '../session.ts';
import { useAction, useData } from '../use-data.ts';

const HOUR = 3600;

/** One subscription: its settings, its delivery success and messages, its actions (test, rotate, recover, enable, delete). */
export function SubscriptionPage({ id }: { id: number }) {
  const { api } = useSession();
  const path = { params: { path: { subscription_id: id } } };
  const sub = useData(() => ok(api.GET('/api/v2/webhooks/subscriptions/{subscription_id}', path)), [id]);
  const action = useAction();
  const [secret, setSecret] = useState<{ value: string; note: ComponentChildren }>();
  const [overlapHours, setOverlapHours] = useState('24');
  const [since, setSince] = useState(() => localInput(new Date(Date.now() - 24 * HOUR * 1000)));
  const [deleting, setDeleting] = useState(false);
  const [logVersion, setLogVersion] = useState(0);
  const [statsVersion, setStatsVersion] = useState(0);
  const [testType, setTestType] = useState<MessageEventType>('webhook.test');

  /** Runs an action; the subscription and its log are read again after it. */
  const act = (run: () => Promise<string | undefined>) =>
    action.run(async () => {
      const done = await run();
      await sub.reload();
      setLogVersion((v) => v + 1);
      return done;
    });

  const save = async (f: SubscriptionFields) => {
    await ok(api.PATCH('/api/v2/webhooks/subscriptions/{subscription_id}', { ...path, body: { url: f.url, events: f.events, description: f.description || null } }));
    await act(async () => 'The subscription is saved.');
  };
  const setActive = (is_active: boolean) =>
    act(async () => {
      await ok(api.PATCH('/api/v2/webhooks/subscriptions/{subscription_id}', { ...path, body: { is_active } }));
      return is_active ? 'The subscription is enabled.' : 'The subscription is disabled: nothing is delivered to it.';
    });
  const sendTest = () =>
    act(async () => {
      const queued = await ok(api.POST('/api/v2/webhooks/subscriptions/{subscription_id}/test', { ...path, body: { event_type: testType } }));
      return `${queued.message} (${queued.message_id}).`;
    });
  const rotate = () =>
    act(async () => {
      const overlap_seconds = Math.round(Number(overlapHours) * HOUR);
      const rotated = await ok(api.POST('/api/v2/webhooks/subscriptions/{subscription_id}/rotate-secret', { ...path, body: { overlap_seconds } }));
      const until = rotated.previous_secret_expires_at;
      setSecret({
        value: rotated.secret,
        note: until ? (
          <>
            Deliveries are signed with this new secret; they also carry the signature of the old one until it expires <When at={until} />.
          </>
        ) : (
          'Deliveries are signed with this new secret only, from now on.'
        ),
      });
      return 'The secret is rotated.';
    });
  const recover = (event: Event) => {
    event.preventDefault();
    void act(async () => {
      const queued = await ok(api.POST('/api/v2/webhooks/subscriptions/{subscription_id}/recover', { ...path, body: { since: new Date(since).toISOString() } }));
      return `${queued.message}.`;
    });
  };
  const remove = () =>
    action.run(async () => {
      await ok(api.DELETE('/api/v2/webhooks/subscriptions/{subscription_id}', path));
      setDeleting(false);
      showToast(`Subscription ${id} is deleted: nothing more is delivered to it.`);
      navigate(href('/webhooks'));
      return undefined;
    });

  const s = sub.data;
  return (
    <Page title={`Subscription ${id}`}>
      <ErrorNotice message={sub.error ?? action.error} />
      <Notice>{action.notice}</Notice>
      {secret && <SecretOnce secret={secret.value} note={secret.note} onDismiss={() => setSecret(undefined)} />}
      {s && (
        <>
          <dl class="facts">
            <dt>URL</dt>
            <dd class="wrap">{s.url}</dd>
            <dt>State</dt>
            <dd>
              <Badge value={s.is_active ? 'enabled' : 'disabled'} /> {s.disabled_reason ?? ''}
            </dd>
            <dt>Events</dt>
            <dd>{s.events.join(', ')}</dd>
            <dt>Payloads</dt>
            <dd>as API {s.api_version} renders orders</dd>
            {s.previous_secret_expires_at && (
              <>
                <dt>Previous secret stops signing</dt>
                <dd>
                  <When at={s.previous_secret_expires_at} />
                </dd>
              </>
            )}
          </dl>
          <div class="actions">
            <button type="button" disabled={action.busy} onClick={() => void setActive(!s.is_active)}>
              {s.is_active ? 'Disable' : 'Enable'}
            </button>
            <button type="button" class="danger" disabled={action.busy} onClick={() => setDeleting(true)}>
              Delete
            </button>
          </div>
          <DeliverySuccess id={id} version={statsVersion} />
          <MessageLog subscriptionId={id} version={logVersion} onLoaded={() => setStatsVersion((v) => v + 1)} />
          <h2>Send a test event</h2>
          <div class="card inline-form">
            <label for="test-type">Test event type</label>
            <select id="test-type" value={testType} onChange={(e) => setTestType(MESSAGE_EVENT_TYPES.find((t) => t === e.currentTarget.value) ?? 'webhook.test')}>
              {MESSAGE_EVENT_TYPES.filter((t) => s.api_version === 'v2' || t !== 'order.cancelled').map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
            <button type="button" class="primary" disabled={action.busy} onClick={() => void sendTest()}>
              Send test event
            </button>
          </div>
          <p>
            A sample of the chosen type, as <a href={href('/webhooks/event-types')}>Event types</a> shows it, signed like every delivery.
          </p>
          <h2>Rotate the secret</h2>
          <div class="card inline-form">
            <label for="overlap">Old secret keeps signing for (hours)</label>
            <input id="overlap" type="number" min="0" max="168" step="1" value={overlapHours} onInput={(e) => setOverlapHours(e.currentTarget.value)} />
            <button type="button" disabled={action.busy} onClick={() => void rotate()}>
              Rotate secret
            </button>
          </div>
          <h2>Recover failed messages</h2>
          <form class="card inline-form" onSubmit={recover}>
            <label for="recover-since">Failed since</label>
            <input id="recover-since" type="datetime-local" step="1" required value={since} onInput={(e) => setSince(e.currentTarget.value)} />
            <button type="submit" disabled={action.busy}>
              Recover
            </button>
          </form>
          <h2>Change the subscription</h2>
          <SubscriptionForm
            key={s.updated_at}
            idPrefix="edit"
            initial={{ url: s.url, events: s.events as SubscriptionFields['events'], description: s.description ?? '' }}
            submitLabel="Save changes"
            onSave={save}
          />
        </>
      )}
      <ConfirmDialog
        open={deleting}
        title={`Delete subscription ${id}?`}
        confirmLabel="Yes, delete it"
        keepLabel="Keep it"
        busy={action.busy}
        onConfirm={() => void remove()}
        onClose={() => setDeleting(false)}
      >
        <p>Nothing more is delivered to {s?.url}, and its message log can no longer be read.</p>
      </ConfirmDialog>
    </Page>
  );
}

const PERIODS = { hour: 'in the last 24 hours', day: 'in the last 30 days' } as const;

/** The subscription's delivery attempts per hour or day (GET …/stats), read again with each reading of its messages (`version`). */
function DeliverySuccess({ id, version }: { id: number; version: number }) {
  const { api } = useSession();
  const [bucket, setBucket] = useState<'hour' | 'day'>('hour');
  const stats = useData(
    () => ok(api.GET('/api/v2/webhooks/subscriptions/{subscription_id}/stats', { params: { path: { subscription_id: id }, query: { bucket } } })),
    [id, bucket],
  );
  // read again in place: new deps would drop the chart while it loads (and hide its table of numbers again)
  useEffect(() => {
    if (version > 0) void stats.reload();
  }, [version]);
  return (
    <>
      <div class="filters">
        <div class="field">
          <label for="stats-bucket">Delivery success period</label>
          <select id="stats-bucket" value={bucket} onChange={(e) => setBucket(e.currentTarget.value === 'day' ? 'day' : 'hour')}>
            <option value="hour">Last 24 hours, by hour</option>
            <option value="day">Last 30 days, by day</option>
          </select>
        </div>
      </div>
      <ErrorNotice message={stats.error} />
      {stats.data && <DeliverySuccessChart title="Delivery success" buckets={stats.data.buckets} bucket={stats.data.bucket} scope={`to this subscription ${PERIODS[stats.data.bucket]}`} />}
    </>
  );
}
