import { useState } from 'preact/hooks';
import { messageOf, ok, serviceClient, type Console } from '../api.ts';
import { ErrorNotice, Notice } from '../components/notice.tsx';
import { Page } from '../components/page.tsx';
import type { Me } from '../types.ts';

/** Sign-in with e-mail and password: the API's login, then who the user is. */
export function SignIn({ notice, onSignedIn }: { notice?: string; onSignedIn: (client: Console, me: Me) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const anonymous = serviceClient(undefined);
      const tokens = await ok(anonymous.api.POST('/api/v2/auth/login', { body: { username: email, password } }));
      const client = serviceClient({ accessToken: tokens.access_token, refreshToken: tokens.refresh_token });
      const me = await ok(client.api.GET('/api/v2/auth/me'));
      onSignedIn(client, me);
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
    }
  };

  return (
    <Page title="Sign in">
      <Notice>{notice}</Notice>
      <form class="card sign-in" onSubmit={(e) => void submit(e)}>
        <label for="email">E-mail</label>
        <input id="email" type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        <label for="password">Password</label>
        <input
          id="password"
          type="password"
          autocomplete="current-password"
          required
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
        <ErrorNotice message={error} />
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </Page>
  );
}
