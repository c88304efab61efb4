import { Type, type TSchema } from 'typebox';

/** An integer id in a path (out of range: 404, path-ids.ts); `example` names the row the create example makes. */
export const IdOf = (example: number) => Type.Integer({ examples: [example] });

export const Timestamp = Type.String({ format: 'date-time' });
export const NullableTimestamp = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
export const NullableText = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

export const PageQuery = {
  page: Type.Integer({ minimum: 1, maximum: 1000000, default: 1 }),
  page_size: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
};

export function Page<T extends TSchema>(item: T, description: string) {
  return Type.Object(
    {
      items: Type.Array(item),
      total: Type.Integer(),
      page: Type.Integer(),
      page_size: Type.Integer(),
      has_next: Type.Boolean(),
    },
    { description },
  );
}

/** A page of an administrators' list, its total counted up to a cap (db/capped-count.ts). */
export function CappedPage<T extends TSchema>(item: T, description: string) {
  const total_exact = Type.Boolean({ description: 'false: more match than `total` (counted up to 10,000 or the end of this page)' });
  return Type.Object({ ...Page(item, description).properties, total_exact }, { description });
}

export type PageResult<T> = ReturnType<typeof pageOf<T>>;

export function pageOf<T>(items: T[], total: number, page: number, pageSize: number) {
  return { items, total, page, page_size: pageSize, has_next: page * pageSize < total };
}

export type CappedPageResult<T> = PageResult<T> & { total_exact: boolean };

/** `pageOf` with a capped count: a count that is not exact went past this page, so another follows. */
export function cappedPageOf<T>(items: T[], count: { total: number; exact: boolean }, page: number, pageSize: number): CappedPageResult<T> {
  const result = pageOf(items, count.total, page, pageSize);
  return { ...result, has_next: result.has_next || !count.exact, total_exact: count.exact };
}

export function iso(d: Date | string): string {
  return (d instanceof Date ? d : new Date(d)).toISOString();
}

export function isoOrNull(d: Date | string | null | undefined): string | null {
  return d === null || d === undefined ? null : iso(d);
}

/** Strings that must hold at least one visible character. */
export const NonBlank = (opts: { maxLength: number; description?: string }) =>
  Type.String({ minLength: 1, pattern: '\\S', ...opts });

/** Bounds the documents show as `minimum`/`maximum`: outside them is the business-rule 400 (`INVALID_QUANTITY`), not a 422. */
export const RULE_BOUNDS = 'x-rule-bounds';
export const ruleBounds = (minimum: number, maximum: number) => ({ [RULE_BOUNDS]: { minimum, maximum } });
