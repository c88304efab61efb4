import { useEffect, useState } from 'preact/hooks';
import { ago, when } from '../format.ts';

/** How often the relative times on the page are written again, so "5 minutes ago" stays true. */
const TICK_MS = 30_000;
const ticking = new Set<() => void>();
let timer: ReturnType<typeof setInterval> | undefined;

/** One timer for every moment shown on the page. */
function useTick(): void {
  const [, setTick] = useState(0);
  useEffect(() => {
    const bump = () => setTick((n) => n + 1);
    ticking.add(bump);
    timer ??= setInterval(() => ticking.forEach((b) => b()), TICK_MS);
    return () => {
      ticking.delete(bump);
      if (ticking.size === 0) {
        clearInterval(timer);
        timer = undefined;
      }
    };
  }, []);
}

/** A moment as "5 minutes ago", its exact date and time on hover (and in `datetime` for machines). */
export function When({ at }: { at: string | null | undefined }) {
  useTick();
  if (!at) return null;
  return (
    <time dateTime={at} title={when(at)}>
      {ago(at)}
    </time>
  );
}
