import { sql, type RawBuilder } from 'kysely';

/**
 * `timestamptz` text from PostgreSQL to a Date, and a Date to the API's ISO 8601 text (also as SQL,
 * for a response that PostgreSQL renders itself).
 *
 * node-pg parses timestamps with a general regular expression, and `Date#toISOString` is slow in V8:
 * a page of 20 orders spent about a tenth of the API's CPU on its 40 timestamps.
 * Both functions take a short path for the one shape they meet in practice and hand anything else
 * to the general code.
 */

const ZERO = 48;
/** Where `YYYY-MM-DD HH:MM:SS` has its digits. */
const DIGITS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18];

function isDigit(code: number): boolean {
  return code >= ZERO && code <= ZERO + 9;
}

function digits2(s: string, at: number): number {
  return (s.charCodeAt(at) - ZERO) * 10 + (s.charCodeAt(at + 1) - ZERO);
}

/**
 * PostgreSQL's ISO output, `YYYY-MM-DD HH:MM:SS[.ffffff]±HH[:MM]`, for years 1000–9999. Returns
 * undefined for anything else (BC, infinity, a five-digit year, an offset with seconds), so the
 * caller falls back to the general parser. Sub-millisecond digits are dropped, as `Date` holds ms.
 */
export function parseIsoTimestamptz(s: string): Date | undefined {
  const n = s.length;
  if (n < 22 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || s.charCodeAt(10) !== 32 || s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58) {
    return undefined;
  }
  for (const at of DIGITS) if (!isDigit(s.charCodeAt(at))) return undefined;
  const year = digits2(s, 0) * 100 + digits2(s, 2);
  if (!(year >= 1000 && year <= 9999)) return undefined;
  let i = 19;
  let ms = 0;
  if (s.charCodeAt(i) === 46) {
    // integer steps for the first three digits, so 0.285 s is 285 ms exactly (not 284.99…)
    let scale = 100;
    for (i = 20; i < n; i++) {
      const c = s.charCodeAt(i);
      if (!isDigit(c)) break;
      if (scale >= 1) ms += (c - ZERO) * scale;
      scale /= 10;
    }
  }
  const sign = s.charCodeAt(i);
  if ((sign !== 43 && sign !== 45) || !isDigit(s.charCodeAt(i + 1)) || !isDigit(s.charCodeAt(i + 2))) return undefined;
  let offsetMinutes = digits2(s, i + 1) * 60;
  if (i + 3 === n) {
    // ±HH
  } else if (i + 6 === n && s.charCodeAt(i + 3) === 58 && isDigit(s.charCodeAt(i + 4)) && isDigit(s.charCodeAt(i + 5))) {
    offsetMinutes += digits2(s, i + 4);
  } else {
    return undefined;
  }
  const utc = Date.UTC(year, digits2(s, 5) - 1, digits2(s, 8), digits2(s, 11), digits2(s, 14), digits2(s, 17), ms);
  return new Date(utc - (sign === 43 ? 1 : -1) * offsetMinutes * 60_000);
}

/** The timestamp parser for node-pg: the short path above, else `general` (pg-types' own). */
export function timestamptzParser(general: (s: string) => unknown): (s: string) => unknown {
  return (s) => parseIsoTimestamptz(s) ?? general(s);
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : `${n}`;
}

function pad3(n: number): string {
  return n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`;
}

/** `Date#toISOString`, about twice as fast for years 1000–9999 (the same text). */
export function toIsoString(d: Date): string {
  const year = d.getUTCFullYear();
  if (!(year >= 1000 && year <= 9999)) return d.toISOString(); // also throws for an invalid date, as toISOString does
  return `${year}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}T${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}.${pad3(d.getUTCMilliseconds())}Z`;
}

/**
 * The text `toIsoString` gives for the column's value (years 1000–9999), written by PostgreSQL in
 * any session time zone. `MS` drops the sub-millisecond digits, as `parseIsoTimestamptz` does.
 */
export function isoTimestampSql(column: string): RawBuilder<string> {
  return sql<string>`to_char(${sql.ref(column)} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}
