import { useEffect, useState } from 'preact/hooks';

/** How long a toast stays; it can be dismissed sooner. */
const TOAST_MS = 10000;

interface Toast {
  id: number;
  text: string;
}

let current: Toast | undefined;
let seq = 0;
const listeners = new Set<(t: Toast | undefined) => void>();

/** Shows `text` as the toast (one at a time: a newer one replaces it). */
export function showToast(text: string): void {
  current = { id: ++seq, text };
  for (const listener of listeners) listener(current);
}

/**
 * The console's toast: what the last action did, announced politely. The live region is always in
 * the page (empty between toasts), so screen readers announce the text put into it.
 */
export function Toasts() {
  const [toast, setToast] = useState(current);
  useEffect(() => {
    listeners.add(setToast);
    setToast(current); // one shown before this frame subscribed
    return () => void listeners.delete(setToast);
  }, []);
  const dismiss = () => {
    current = undefined;
    setToast(undefined);
  };
  useEffect(() => {
    if (!toast) return;
    const timer = setTimeout(dismiss, TOAST_MS);
    return () => clearTimeout(timer);
  }, [toast?.id]);
  return (
    <div class={toast ? 'toast' : 'toast toast-empty'}>
      <p role="status">{toast?.text}</p>
      {toast && (
        <button type="button" aria-label="Dismiss the message" onClick={dismiss}>
          ×
        </button>
      )}
    </div>
  );
}
