import { useEffect } from 'preact/hooks';
import { showToast } from './toast.tsx';

/** A failure, announced at once by screen readers. */
export function ErrorNotice({ message }: { message: string | undefined }) {
  if (!message) return null;
  return (
    <p class="notice notice-error" role="alert">
      {message}
    </p>
  );
}

/** The outcome of an action: shown as the console's toast (announced politely) when it changes. */
export function Notice({ children }: { children: string | undefined }) {
  useEffect(() => {
    if (children) showToast(children);
  }, [children]);
  return null;
}

/** A status word as a badge; its colour only repeats the word. */
export function Badge({ value }: { value: string }) {
  return <span class={`badge badge-${value}`}>{value.replaceAll('_', ' ')}</span>;
}
