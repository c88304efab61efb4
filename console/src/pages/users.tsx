import { useState } from 'preact/hooks';
import { ok } from '../api.ts';
import { ConfirmDialog } from '../components/dialog.tsx';
import { FilterForm, queryValues } from '../components/filter-form.tsx';
import { ErrorNotice, Notice } from '../components/notice.tsx';
import { Page } from '../components/page.tsx';
import { Pager } from '../components/pager.tsx';
import { href, navigate, pageOf, useLocation } from '../router.ts';
import { useSession } from '../session.ts';
import { useAction, useData } from '../use-data.ts';
import { Head } from '../components/table.tsx';
import { When } from '../components/when.tsx';

const PAGE_SIZE = 20;

/** Staff: the users, searched by e-mail; activate and deactivate (not one's own account). */
export function UsersPage() {
  const { api, me } = useSession();
  const url = useLocation();
  const filters = queryValues(url, ['email']);
  const page = pageOf(url);
  const users = useData(
    () => ok(api.GET('/api/v2/admin/users', { params: { query: { page, page_size: PAGE_SIZE, email: filters.email || undefined } } })),
    [url.search],
  );
  const action = useAction();
  // the user Deactivate was pressed for, until the dialog is answered
  const [deactivating, setDeactivating] = useState<{ id: number; email: string }>();
  const setActive = (id: number, email: string, active: boolean) =>
    action.run(async () => {
      await ok(api.PATCH('/api/v2/users/{user_id}', { params: { path: { user_id: id } }, body: { is_active: active } }));
      setDeactivating(undefined);
      await users.reload();
      return active ? `${email} is active.` : `${email} is deactivated and signed out everywhere.`;
    });

  return (
    <Page title="Users">
      <FilterForm
        label="Search users"
        values={filters}
        onApply={(v) => navigate(href('/users', v))}
        fields={[{ name: 'email', label: 'Search by e-mail', type: 'search' }]}
      />
      <ErrorNotice message={users.error ?? (deactivating ? undefined : action.error)} />
      <Notice>{action.notice}</Notice>
      {users.data && (
        <>
          <table aria-labelledby="page-title">
            <Head cols={['E-mail', 'Name', 'Role', 'State', 'Created', 'Action']} />
            <tbody>
              {users.data.items.map((u) => (
                <tr key={u.id}>
                  <td>{u.email}</td>
                  <td>{u.full_name}</td>
                  <td>{u.is_admin ? 'Staff' : 'Customer'}</td>
                  <td>{u.is_active ? 'Active' : 'Deactivated'}</td>
                  <td>
                    <When at={u.created_at} />
                  </td>
                  <td>
                    {u.id === me.id ? (
                      'You'
                    ) : (
                      <button
                        type="button"
                        disabled={action.busy}
                        onClick={() => (u.is_active ? setDeactivating({ id: u.id, email: u.email }) : void setActive(u.id, u.email, true))}
                      >
                        {u.is_active ? 'Deactivate' : 'Activate'}
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {users.data.items.length === 0 && <p>No user{filters.email ? ` has an e-mail containing “${filters.email}”` : ''}.</p>}
          <Pager info={users.data} noun="user" hrefOf={(p) => href('/users', { ...filters, page: p })} />
        </>
      )}
      <ConfirmDialog
        open={deactivating !== undefined}
        title={`Deactivate ${deactivating?.email ?? ''}?`}
        confirmLabel="Yes, deactivate"
        keepLabel="Keep the account active"
        busy={action.busy}
        onConfirm={() => deactivating && void setActive(deactivating.id, deactivating.email, false)}
        onClose={() => setDeactivating(undefined)}
      >
        <p>
          This ends every session of the account at once: they are signed out on every device and cannot sign in until the account is activated
          again.
        </p>
        <ErrorNotice message={action.error} />
      </ConfirmDialog>
    </Page>
  );
}
