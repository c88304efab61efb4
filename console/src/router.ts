/**
 * The console's addresses: /console/… paths in the browser's history, so a page can be linked,
 * reloaded and reached with Back. The service answers every /console path with the same page.
 */
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/console';

const listeners = new Set<() => void>();

/** Goes to `href` (a /console path, with its query) without loading the page again. */
export function navigate(href: string, opts: { replace?: boolean } = {}): void {
  if (opts.replace) history.replaceState(null, '', href);
  else history.pushState(null, '', href);
  for (const listener of listeners) listener();
}

/** The current address; the component renders again when it changes. */
export function useLocation(): URL {
  const [url, setUrl] = useState(() => new URL(location.href));
  useEffect(() => {
    const update = () => setUrl(new URL(location.href));
    listeners.add(update);
    addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      removeEventListener('popstate', update);
    };
  }, []);
  return url;
}

/** Follows a click on a same-origin /console link in the page instead of loading it anew. */
export function interceptLinks(root: HTMLElement): void {
  root.addEventListener('click', (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const link = (event.target as Element | null)?.closest('a');
    if (!link || link.target || link.hasAttribute('download')) return;
    const url = new URL(link.href, location.href);
    if (url.origin !== location.origin || (url.pathname !== BASE && !url.pathname.startsWith(`${BASE}/`))) return;
    // a link within this page (#main) is the browser's to follow
    if (url.hash && url.pathname === location.pathname && url.search === location.search) return;
    event.preventDefault();
    navigate(url.pathname + url.search);
  });
}

/** `path` under the console with `query`'s non-empty values. */
export function href(path: string, query: Record<string, string | number | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
  const search = params.toString();
  return `${BASE}${path}${search ? `?${search}` : ''}`;
}

/** The page number in the query (1 when absent or not a positive integer). */
export function pageOf(url: URL): number {
  const n = Number(url.searchParams.get('page'));
  return Number.isInteger(n) && n > 0 ? n : 1;
}
