import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { forgetSession, ok, onSessionEnded, serviceClient, type Console } from './api.ts';
import { BASE, href, navigate, useLocation } from './router.ts';
import { pageFor } from './routes.tsx';
import { SessionContext, type SignedIn } from './session.ts';
import { SignIn } from './pages/sign-in.tsx';

const STAFF_LINKS = [
  ['/orders', 'Orders'],
  ['/inbound-webhooks', 'Inbound webhooks'],
  ['/users', 'Users'],
  ['/products', 'Products'],
] as const;
const USER_LINKS = [
  ['/webhooks', 'Webhooks'],
  ['/my-orders', 'My orders'],
] as const;

/** Where a user lands after signing in: staff on every order, others on their own. */
const homeOf = (isAdmin: boolean) => href(isAdmin ? '/orders' : '/my-orders');

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

  // a session kept in this tab (a reload) is taken up again if its tokens still work
  useEffect(() => {
    const client = serviceClient();
    if (!client.session) return setSession(null);
    ok(client.api.GET('/api/v2/auth/me'))
      .then((me) => setSession({ client, me }))
      .catch(() => {
        forgetSession();
        setSession(null);
      });
  }, []);
  useEffect(
    () =>
      onSessionEnded(() => {
        forgetSession();
        setSession(null);
        setNotice('Your session has ended. Sign in again.');
      }),
    [],
  );

  if (session === 'restoring') return <p class="loading">Loading…</p>;
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
  const signOut = async () => {
    await session.client.signOut().catch(() => undefined);
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
      <a class="skip" href="#main">
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
      <main id="main">{props.children}</main>
    </>
  );
}
