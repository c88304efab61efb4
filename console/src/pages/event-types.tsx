import { ok } from '../api.ts';
import { ErrorNotice } from '../components/notice.tsx';
import { Page } from '../components/page.tsx';
import { href } from '../router.ts';
import { useSession } from '../session.ts';
import { useData } from '../use-data.ts';

/** The event types a subscription can be sent (GET /api/v2/webhooks/event-types): what each means, its schema and a sample. */
export function EventTypesPage() {
  const { api } = useSession();
  const types = useData(() => ok(api.GET('/api/v2/webhooks/event-types')), []);
  return (
    <Page title="Event types">
      <p>
        Each message's body is one of these, signed as Standard Webhooks say. The schemas and samples are of API v2; a subscription created under
        API v1 receives a cancellation as a move to <code>failed</code> with the reason <code>CANCELLED</code>. A{' '}
        <a href={href('/webhooks')}>subscription</a> can send you a sample of any of them.
      </p>
      <ErrorNotice message={types.error} />
      {types.data && (
        <nav aria-label="Event types">
          <ul>
            {types.data.items.map((t) => (
              <li key={t.name}>
                <a href={`#${anchor(t.name)}`}>
                  <code>{t.name}</code>
                </a>
              </li>
            ))}
          </ul>
        </nav>
      )}
      {types.data?.items.map((t) => (
        <section key={t.name} aria-labelledby={anchor(t.name)}>
          <h2 id={anchor(t.name)}>
            <code>{t.name}</code>
          </h2>
          <p>{withCode(t.description)}</p>
          <h3>Schema</h3>
          <pre class="code" tabIndex={0}>
            {JSON.stringify(t.schema, null, 2)}
          </pre>
          <h3>Sample</h3>
          <pre class="code" tabIndex={0}>
            {JSON.stringify(t.example, null, 2)}
          </pre>
        </section>
      ))}
    </Page>
  );
}

/** An element id for a type's section (`order.created` → `type-order-created`). */
const anchor = (name: string) => `type-${name.replaceAll('.', '-').replaceAll('_', '-')}`;

/** A description's `code` spans as code. */
const withCode = (text: string) => text.split('`').map((part, i) => (i % 2 === 1 ? <code key={i}>{part}</code> : part));
