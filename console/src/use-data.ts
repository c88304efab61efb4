/** Loading a page's data from the API, and polling it while the page is in view. */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { messageOf } from './api.ts';
import { useOrderEvents } from './live.ts';

/** How long a live page waits after an order event for more before it loads again. */
const LIVE_DEBOUNCE_MS = 250;

export interface Loaded<T> {
  data: T | undefined;
  /** the last load's failure, in plain words */
  error: string | undefined;
  loading: boolean;
  /** loads again; the data shown stays until the new data is there */
  reload: () => Promise<void>;
}

export interface DataOptions {
  /** loads again on each order event (GET /api/v2/events) the user may see, a burst of them once */
  live?: boolean;
}

/**
 * Runs `load` when `deps` change; the answer of a load overtaken by a later one is dropped. With
 * `live`, it runs again within LIVE_DEBOUNCE_MS of an order event.
 */
export function useData<T>(load: () => Promise<T>, deps: unknown[], options: DataOptions = {}): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const latest = useRef(0);
  const loader = useRef(load);
  loader.current = load;
  const reload = useCallback(async () => {
    const mine = ++latest.current;
    setState((s) => ({ ...s, loading: true }));
    try {
      const data = await loader.current();
      if (mine === latest.current) setState({ data, loading: false });
    } catch (err) {
      if (mine === latest.current) setState((s) => ({ data: s.data, error: messageOf(err), loading: false }));
    }
  }, []);
  useEffect(() => {
    setState({ loading: true });
    void reload();
  }, deps);
  const pending = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(pending.current), []);
  useOrderEvents(() => {
    // the first event of a burst schedules the load; the ones after it are covered by it
    pending.current ??= setTimeout(() => {
      pending.current = undefined;
      void reload();
    }, LIVE_DEBOUNCE_MS);
  }, options.live === true);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/**
 * Calls `tick` every `intervalMs` while `active` and the tab is visible, one call at a time (the
 * next waits for the previous to end); a hidden tab makes no requests and ticks at once when shown.
 */
export function usePoll(tick: () => Promise<unknown>, intervalMs: number, active: boolean): void {
  const latest = useRef(tick);
  latest.current = tick;
  useEffect(() => {
    if (!active) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    const schedule = () => {
      if (!stopped && !document.hidden) timer = setTimeout(run, intervalMs);
    };
    const run = async () => {
      timer = undefined;
      try {
        await latest.current();
      } finally {
        schedule();
      }
    };
    const onVisibility = () => {
      if (document.hidden) {
        clearTimeout(timer);
        timer = undefined;
      } else if (timer === undefined) void run();
    };
    document.addEventListener('visibilitychange', onVisibility);
    schedule();
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [active, intervalMs]);
}

export interface Action {
  busy: boolean;
  /** the last action's failure, in plain words */
  error: string | undefined;
  /** what the last action did, in plain words */
  notice: string | undefined;
  /** runs `action` (one at a time): its result is the notice, a throw the error; true when it succeeded */
  run: (action: () => Promise<string | undefined>) => Promise<boolean>;
}

/** A button's action against the API, with its outcome to show. */
export function useAction(): Action {
  const [state, setState] = useState<{ busy: boolean; error?: string; notice?: string }>({ busy: false });
  const run = useCallback(async (action: () => Promise<string | undefined>) => {
    setState({ busy: true });
    try {
      setState({ busy: false, notice: await action() });
      return true;
    } catch (err) {
      setState({ busy: false, error: messageOf(err) });
      return false;
    }
  }, []);
  return { busy: state.busy, error: state.error, notice: state.notice, run };
}
