/** The signed-in user and their client, for every page below the shell. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Api, Console } from './api.ts';
import type { Me } from './types.ts';

export interface SignedIn {
  client: Console;
  me: Me;
}

export const SessionContext = createContext<SignedIn | null>(null);

export function useSession(): { api: Api; me: Me; client: Console } {
  const session = useContext(SessionContext);
  if (!session) throw new Error('a console page rendered outside a session');
  return { api: session.client.api, me: session.me, client: session.client };
}
