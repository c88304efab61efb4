import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { EventKind } from '../types.ts';
import { ErrorNotice } from './notice.tsx';

/** The event kinds a subscription of API v2 can take, with what each means. */
export const EVENT_KINDS: readonly [EventKind, string][] = [
  ['order.created', 'an order is created'],
  ['order.status_changed', "an order's status changes"],
  ['order.cancelled', 'an order is cancelled'],
];

export interface SubscriptionFields {
  url: string;
  events: EventKind[];
  description: string;
}

/** URL, event kinds and description of a subscription; `onSave` throws to show its error here. */
export function SubscriptionForm(props: { idPrefix: string; initial: SubscriptionFields; submitLabel: string; onSave: (f: SubscriptionFields) => Promise<void> }) {
  const [fields, setFields] = useState(props.initial);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const id = (name: string) => `${props.idPrefix}-${name}`;
  const toggle = (kind: EventKind, on: boolean) =>
    setFields((f) => ({ ...f, events: on ? [...f.events, kind] : f.events.filter((k) => k !== kind) }));

  const submit = async (event: Event) => {
    event.preventDefault();
    if (fields.events.length === 0) return setError('Choose at least one event.');
    setBusy(true);
    setError(undefined);
    try {
      await props.onSave(fields);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="card" onSubmit={(e) => void submit(e)}>
      <label for={id('url')}>URL</label>
      <input id={id('url')} type="url" required value={fields.url} onInput={(e) => setFields({ ...fields, url: e.currentTarget.value })} />
      <fieldset>
        <legend>Events</legend>
        {EVENT_KINDS.map(([kind, meaning]) => (
          <div class="check" key={kind}>
            <input id={id(kind)} type="checkbox" checked={fields.events.includes(kind)} onChange={(e) => toggle(kind, e.currentTarget.checked)} />
            <label for={id(kind)}>
              <code>{kind}</code>: {meaning}
            </label>
          </div>
        ))}
      </fieldset>
      <label for={id('description')}>Description (optional)</label>
      <input id={id('description')} type="text" maxLength={500} value={fields.description} onInput={(e) => setFields({ ...fields, description: e.currentTarget.value })} />
      <ErrorNotice message={error} />
      <button type="submit" class="primary" disabled={busy}>
        {props.submitLabel}
      </button>
    </form>
  );
}

/** A signing secret, shown once: the API gives it only on creation and rotation. */
export function SecretOnce({ secret, note, onDismiss }: { secret: string; note: ComponentChildren; onDismiss: () => void }) {
  return (
    <div class="card secret" role="region" aria-labelledby="secret-title">
      <h2 id="secret-title">Signing secret</h2>
      <p>{note} Copy it now: it is not shown again.</p>
      <label for="secret-value">Secret</label>
      <input id="secret-value" type="text" readOnly value={secret} onFocus={(e) => e.currentTarget.select()} />
      <button type="button" onClick={onDismiss}>
        I have copied it
      </button>
    </div>
  );
}
