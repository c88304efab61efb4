import type { ComponentChildren } from 'preact';

/** A failure, announced at once by screen readers. */
export function ErrorNotice({ message }: { message: string | undefined }) {
  if (!message) return null;
  return (
    <p class="notice notice-error" role="alert">
      {message}
    </p>
  );
}

/** The outcome of an action, announced politely. */
export function Notice({ children }: { children: ComponentChildren }) {
  if (!children) return null;
  return (
    <p class="notice" role="status">
      {children}
    </p>
  );
}

/** A status word as a badge; its colour only repeats the word. */
export function Badge({ value }: { value: string }) {
  return <span class={`badge badge-${value}`}>{value.replaceAll('_', ' ')}</span>;
}
