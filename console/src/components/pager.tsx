import { plural } from '../format.ts';

export interface PageInfo {
  page: number;
  page_size: number;
  total: number;
  has_next: boolean;
}

/** Previous and next page links under a list the API pages; `hrefOf` makes a page's address. */
export function Pager({ info, noun, hrefOf }: { info: PageInfo; noun: string; hrefOf: (page: number) => string }) {
  const pages = Math.max(1, Math.ceil(info.total / info.page_size));
  return (
    <nav class="pager" aria-label={`Pages of ${noun}s`}>
      {info.page > 1 ? <a href={hrefOf(info.page - 1)}>Previous page</a> : <span aria-hidden="true" />}
      <span>
        Page {info.page} of {pages} · {plural(info.total, noun)}
      </span>
      {info.has_next ? <a href={hrefOf(info.page + 1)}>Next page</a> : <span aria-hidden="true" />}
    </nav>
  );
}
