/**
 * A thin typed client of the Order and Account Service on openapi-fetch, for either API version:
 * every path, parameter, body and response is typed by schema-v1.d.ts or schema-v2.d.ts (generated
 * from the service's OpenAPI documents by `npm run client:generate`). It adds what every caller
 * needs around the generated types: the base URL, the bearer token on each call, and a refresh of
 * the access token with the refresh token, once, when a call answers 401, after which the call is
 * repeated.
 *
 *   const service = createServiceClient({ baseUrl: 'http://127.0.0.1:8000', version: 'v2' });
 *   await service.signIn('admin@example.com', 'password');
 *   const { data, error } = await service.api.POST('/api/v2/orders/{order_id}/cancel', { params: { path: { order_id: 1 } } });
 */
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths as V1Paths } from './schema-v1.d.ts';
import type { paths as V2Paths } from './schema-v2.d.ts';

export type { V1Paths, V2Paths };

/** The API versions, each with the paths of its own document. */
export interface VersionPaths {
  v1: V1Paths;
  v2: V2Paths;
}
export type ApiVersion = keyof VersionPaths;

/**
 * The sign-in routes without their version prefix: every version serves them with the same bodies,
 * so v1's types describe them under whichever version the client speaks.
 */
type TokenPaths = { [P in keyof V1Paths as P extends `/api/v1${infer Rest extends `/auth/${string}`}` ? Rest : never]: V1Paths[P] };

/** The tokens of a signed-in session. */
export interface Session {
  accessToken: string;
  refreshToken: string;
}

export interface ServiceClientOptions<V extends ApiVersion = 'v1'> {
  /** where the service runs, without `/api/v1` (the paths carry it) */
  baseUrl: string;
  /** the API version whose paths `api` takes (default v1, the specification's contract) */
  version?: V;
  /** a session to continue (tokens kept from an earlier run) */
  session?: Session;
  /** called whenever the tokens change (sign-in, refresh, sign-out), to keep them */
  onSession?: (session: Session | undefined) => void;
  /** the fetch to use (default: the global one) */
  fetch?: typeof fetch;
}

export interface ServiceClient<V extends ApiVersion = 'v1'> {
  /** the typed openapi-fetch client of the version: `api.GET(path, …)`, `api.POST(path, { body })`, … */
  api: Client<VersionPaths[V]>;
  readonly version: V;
  /** signs in (OAuth2 password grant: the e-mail as username); throws with the service's error body on failure */
  signIn(email: string, password: string): Promise<Session>;
  /** exchanges the refresh token for a new access token; false when there is no session or it is no longer valid */
  refresh(): Promise<boolean>;
  /** revokes the refresh token at the service and forgets the session */
  signOut(): Promise<void>;
  readonly session: Session | undefined;
}

/** Calls that carry no bearer token and are never retried after a refresh, in any version. */
const TOKEN_PATH = /^\/api\/v\d+\/auth\/(login|refresh)$/;

export function createServiceClient<V extends ApiVersion = 'v1'>(options: ServiceClientOptions<V>): ServiceClient<V> {
  const version = options.version ?? ('v1' as V);
  const api = createClient<VersionPaths[V]>({ baseUrl: options.baseUrl, fetch: options.fetch });
  const tokens = createClient<TokenPaths>({ baseUrl: `${options.baseUrl.replace(/\/+$/, '')}/api/${version}`, fetch: options.fetch });
  let session = options.session;
  let refreshing: Promise<boolean> | undefined;
  const setSession = (next: Session | undefined) => {
    session = next;
    options.onSession?.(next);
  };

  // copies of the requests in flight, by openapi-fetch's request id: a body is read once, so the
  // call repeated after a refresh needs its own copy
  const copies = new Map<string, Request>();
  const bearer: Middleware = {
    onRequest({ request, schemaPath, id }) {
      if (!session || TOKEN_PATH.test(schemaPath)) return undefined;
      request.headers.set('authorization', `Bearer ${session.accessToken}`);
      copies.set(id, request.clone());
      return request;
    },
    async onResponse({ response, schemaPath, id }) {
      const copy = copies.get(id);
      copies.delete(id);
      if (response.status !== 401 || !copy || TOKEN_PATH.test(schemaPath)) return undefined;
      if (!(await refresh()) || !session) return undefined;
      copy.headers.set('authorization', `Bearer ${session.accessToken}`);
      return (options.fetch ?? fetch)(copy);
    },
    onError({ id }) {
      copies.delete(id);
    },
  };
  api.use(bearer);

  async function refresh(): Promise<boolean> {
    // concurrent 401s share one refresh
    refreshing ??= (async () => {
      const current = session;
      if (!current) return false;
      const { data } = await tokens.POST('/auth/refresh', { body: { refresh_token: current.refreshToken } });
      if (!data) return false;
      setSession({ accessToken: data.access_token, refreshToken: current.refreshToken });
      return true;
    })().finally(() => {
      refreshing = undefined;
    });
    return refreshing;
  }

  return {
    api,
    version,
    async signIn(email, password) {
      const { data, error } = await tokens.POST('/auth/login', { body: { username: email, password } });
      if (!data) throw new Error(`sign-in failed: ${error?.error_code ?? 'unknown'}: ${error?.detail ?? ''}`);
      const next = { accessToken: data.access_token, refreshToken: data.refresh_token };
      setSession(next);
      return next;
    },
    refresh,
    async signOut() {
      const current = session;
      if (!current) return;
      await tokens.POST('/auth/logout', { body: { refresh_token: current.refreshToken } });
      setSession(undefined);
    },
    get session() {
      return session;
    },
  };
}
