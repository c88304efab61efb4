import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';

/** A page's heading (focused when the page opens, so a screen reader starts there) and the tab's title. */
export function Page({ title, children }: { title: string; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} — Console`;
  }, [title]);
  return (
    <>
      <h1 tabIndex={-1} id="page-title">
        {title}
      </h1>
      {children}
    </>
  );
}
