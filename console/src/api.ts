/**
 * The console's one way to the service: the project's typed client (openapi-fetch over the types
 * generated from the service's OpenAPI document), so a page that asks for a path, parameter or field
 * the API does not have fails the type check. The session's tokens are kept in sessionStorage: they
 * survive a reload of the tab and end with it.
 */
import { createServiceClient, type ServiceClient, type Session } from '../../clients/typescript/client.ts';

const SESSION_KEY = 'oas-console-session';

/** The console speaks API v2: v1's contract is the specification's, without cancellation. */
export type Console = ServiceClient<'v2'>;
export type Api = Console['api'];

function loadSession(): Session | undefined {
  try {
    const saved = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? 'null') as Partial<Session> | null;
    return typeof saved?.accessToken === 'string' && typeof saved.refreshToken === 'string'
      ? { accessToken: saved.accessToken, refreshToken: saved.refreshToken }
      : undefined;
  } catch {
    return undefined;
  }
}

function saveSession(session: Session | undefined): void {
  if (session) sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
  else sessionStorage.removeItem(SESSION_KEY);
}

/**
 * The status of the last token refresh (0: no answer). The client refreshes on every 401, so a 401
 * after a refresh that met a restarting or unreachable service (0, 429, 5xx) does not end the session.
 */
let lastRefresh: number | undefined;
const watchRefresh: typeof fetch = async (input, init) => {
  const request = new Request(input, init);
  const refreshing = new URL(request.url).pathname.endsWith('/auth/refresh');
  try {
    const response = await fetch(request);
    if (refreshing) lastRefresh = response.status;
    return response;
  } catch (err) {
    if (refreshing) lastRefresh = 0;
    throw err;
  }
};

/** A client on this origin; with `session`, or the one kept in this tab. Token refreshes are kept too. */
export function serviceClient(session: Session | undefined = loadSession()): Console {
  saveSession(session);
  return createServiceClient({ baseUrl: location.origin, version: 'v2', session, onSession: saveSession, fetch: watchRefresh });
}

export function forgetSession(): void {
  saveSession(undefined);
}

/** An answer of the API that is not a success, in words a person can act on. */
export class Problem extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

interface ErrorBody {
  detail?: unknown;
  error_code?: unknown;
  errors?: { loc?: unknown[]; msg?: unknown }[];
}

/** The service's `{detail, error_code}` body as a sentence for the person at the page. */
export function problemOf(status: number, body: unknown, retryAfter: string | null = null): Problem {
  const b = (body && typeof body === 'object' ? body : {}) as ErrorBody;
  const code = typeof b.error_code === 'string' ? b.error_code : `HTTP_${status}`;
  const detail = typeof b.detail === 'string' ? b.detail : '';
  const words: Record<string, string> = {
    NOT_AUTHENTICATED: 'Your session has ended. Sign in again.',
    INVALID_TOKEN: 'Your session has ended. Sign in again.',
    INVALID_CREDENTIALS: 'The e-mail or the password is not right.',
    INACTIVE_USER: 'This account is deactivated. Ask an administrator to activate it.',
    ADMIN_REQUIRED: 'Only staff (administrators) may see or do this.',
    RATE_LIMITED: `Too many requests in a short time. Wait ${retryAfter ?? 'a few'} seconds and try again.`,
    LOGIN_THROTTLED: `Too many failed sign-ins. Wait ${retryAfter ?? 'a little'} seconds and try again.`,
    INTERNAL_ERROR: 'The service failed to answer. Try again; if it keeps failing, tell the operators.',
    SERVICE_UNAVAILABLE: 'The service is not available at the moment. Try again in a few seconds.',
  };
  if (code === 'VALIDATION_ERROR' && Array.isArray(b.errors) && b.errors.length > 0) {
    const issues = b.errors.map((e) => `${String(e.loc?.at(-1) ?? 'value')} ${String(e.msg ?? '')}`.trim());
    return new Problem(status, code, `Please check the form: ${issues.join('; ')}.`);
  }
  return new Problem(status, code, words[code] ?? (detail || `The service answered ${status}.`));
}

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** Listeners told when a call answers 401 after the client's refresh: the session is over. */
const sessionEnded = new Set<() => void>();
export function onSessionEnded(listener: () => void): () => void {
  sessionEnded.add(listener);
  return () => sessionEnded.delete(listener);
}

/**
 * The data of a call, or a thrown Problem. A 401 here comes after the client has tried to refresh
 * the access token, so the session is over and the console signs out.
 */
export async function ok<T>(call: Promise<Answer<T>>): Promise<T> {
  let answer: Answer<T>;
  try {
    answer = await call;
  } catch {
    throw new Problem(0, 'NETWORK', 'The service cannot be reached. Check the connection and try again.');
  }
  const { data, error, response } = answer;
  if (response.ok) return data as T;
  if (response.status === 401 && lastRefresh !== undefined && (lastRefresh === 0 || lastRefresh === 429 || lastRefresh >= 500)) {
    // the refresh may work once the service answers again: the session stays
    throw problemOf(lastRefresh, { error_code: 'SERVICE_UNAVAILABLE' });
  }
  const problem = problemOf(response.status, error, response.headers.get('retry-after'));
  if (response.status === 401 && problem.code !== 'INVALID_CREDENTIALS') for (const listener of sessionEnded) listener();
  throw problem;
}

/** The message of anything a call threw. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
