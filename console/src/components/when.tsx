import { ago, when } from '../format.ts';

/** A moment as "5 minutes ago", its exact date and time on hover (and in `datetime` for machines). */
export function When({ at }: { at: string | null | undefined }) {
  if (!at) return null;
  return (
    <time dateTime={at} title={when(at)}>
      {ago(at)}
    </time>
  );
}
