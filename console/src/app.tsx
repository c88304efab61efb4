import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { forgetSession, messageOf, ok, onSessionEnded, Problem, serviceClient, type Console } from './api.ts';
import { ErrorNotice } from './components/notice.tsx';
import { Page } from './components/page.tsx';
import { Toasts } from './components/toast.tsx';
import { usePoll } from './use-data.ts';
import { BASE, href, navigate, useLocation } from './router.ts';
import { pageFor } from './routes.tsx';
import { SessionContext, type SignedIn } from './session.ts';
import { SignIn } from './pages/sign-in.tsx';

const STAFF_LINKS = [
  ['/overview', 'Overview'],
  ['/orders', 'Orders'],
  ['/inbound-webhooks', 'Inbound webhooks'],
  ['/users', 'Users'],
  ['/products', 'Products'],
] as const;
const USER_LINKS = [
  ['/webhooks', 'Webhooks'],
  ['/my-orders', 'My orders'],
] as const;

/** Where a user lands after signing in: staff on the overview, others on their own orders. */
const homeOf = (isAdmin: boolean) => href(isAdmin ? '/overview' : '/my-orders');
/** While the service does not answer a reload's GET /auth/me, how often it is asked again. */
const RESTORE_RETRY_MS = 5000;

export function App() {
  const [session, setSession] = useState<SignedIn | null | 'restoring'>('restoring');
  const [notice, setNotice] = useState<string>();
  const url = useLocation();
  // a page opened in the console starts with its heading focused, as a loaded page would
  const first = useRef(true);
  useEffect(() => {
    if (first.current) first.current = false;
    else document.getElementById('page-title')?.focus();
  }, [url.pathname]);

  // A session kept in this tab (a reload) is taken up again if its tokens still work. Only a 401
  // (after the client's refresh) ends it; a service that is restarting or unreachable is asked again.
  const [unreachable, setUnreachable] = useState<string>();
  const restore = useCallback(async () => {
    const client = serviceClient();
    if (!client.session) return setSession(null);
    try {
      setSession({ client, me: await ok(client.api.GET('/api/v2/auth/me')) });
      setUnreachable(undefined);
    } catch (err) {
      if (err instanceof Problem && err.status === 401) {
        forgetSession();
        setSession(null);
      } else setUnreachable(messageOf(err));
    }
  }, []);
  useEffect(() => void restore(), []);
  usePoll(restore, RESTORE_RETRY_MS, session === 'restoring' && unreachable !== undefined);
  useEffect(
    () =>
      onSessionEnded(() => {
        forgetSession();
        setSession(null);
        setNotice('Your session has ended. Sign in again.');
      }),
    [],
  );

  if (session === 'restoring') {
    if (unreachable === undefined) return <p class="loading">Loading…</p>;
    return (
      <Frame>
        <Page title="Waiting for the service">
          <ErrorNotice message={unreachable} />
          <p>You are still signed in. The console asks the service again every few seconds and goes on where you were.</p>
          <button type="button" class="primary" onClick={() => void restore()}>
            Try again now
          </button>
        </Page>
      </Frame>
    );
  }
  if (!session) {
    const signedIn = (client: Console, me: SignedIn['me']) => {
      setNotice(undefined);
      setSession({ client, me });
      if (url.pathname === BASE || url.pathname === `${BASE}/`) navigate(homeOf(me.is_admin), { replace: true });
    };
    return (
      <Frame>
        <SignIn notice={notice} onSignedIn={signedIn} />
      </Frame>
    );
  }
  // the pages leave before the session is revoked, so no load or stream of theirs meets it revoked;
  // the sign-in form comes once it is, so a new session is not saved before the old one is forgotten
  const signOut = async () => {
    const { client } = session;
    setSession('restoring');
    await client.signOut().catch(() => undefined);
    forgetSession();
    setSession(null);
    setNotice('You are signed out.');
    navigate(BASE);
  };
  return (
    <SessionContext.Provider value={session}>
      <Frame
        user={session.me}
        onSignOut={() => void signOut()}
        links={[...(session.me.is_admin ? STAFF_LINKS : []), ...USER_LINKS]}
        current={url.pathname}
      >
        {pageFor(url, session.me, (to) => navigate(to ?? homeOf(session.me.is_admin), { replace: true }))}
      </Frame>
    </SessionContext.Provider>
  );
}

function Frame(props: {
  user?: SignedIn['me'];
  onSignOut?: () => void;
  links?: readonly (readonly [string, string])[];
  current?: string;
  children: ComponentChildren;
}) {
  return (
    <>
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          // the main content takes the focus, so the next Tab goes on from there
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={BASE}>
          Order and Account Service · Console
        </a>
        {props.user && (
          <div class="who">
            <span>
              {props.user.email}
              {props.user.is_admin ? ' (staff)' : ''}
            </span>
            <button type="button" onClick={props.onSignOut}>
              Sign out
            </button>
          </div>
        )}
      </header>
      {props.links && (
        <nav class="main-nav" aria-label="Main">
          <ul>
            {props.links.map(([path, name]) => {
              const target = href(path);
              const here = props.current === target || props.current?.startsWith(`${target}/`);
              return (
                <li key={path}>
                  <a href={target} aria-current={here ? 'page' : undefined}>
                    {name}
                  </a>
                </li>
              );
            })}
          </ul>
        </nav>
      )}
      <main id="main" tabIndex={-1}>
        {props.children}
      </main>
      <Toasts />
    </>
  );
}
