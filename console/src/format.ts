/** How the console writes the API's values. */

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** A timestamp in the reader's time zone; an empty string for none. */
export function when(iso: string | null | undefined): string {
  return iso ? dateTime.format(new Date(iso)) : '';
}

/** The currency of every amount: the service's CURRENCY setting, which it writes into the page. */
export const CURRENCY = document.querySelector('meta[name="currency"]')?.getAttribute('content') || 'USD';

const moneyFormat = (() => {
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency: CURRENCY });
  } catch {
    // a code this browser does not know: the amount with the code beside it
    return { format: (n: number) => `${n.toFixed(2)} ${CURRENCY}` };
  }
})();

/** An amount of money (a number, or the API's decimal string) in the service's currency, e.g. $1,234.50. */
export function money(amount: number | string): string {
  return moneyFormat.format(Number(amount));
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['second', 60],
  ['minute', 60],
  ['hour', 24],
  ['day', 30],
  ['month', 12],
  ['year', Infinity],
];

/** How long ago (or how far ahead) a moment is, in words: "5 minutes ago", "yesterday". */
export function ago(iso: string, now = Date.now()): string {
  let n = (new Date(iso).getTime() - now) / 1000;
  for (const [unit, size] of UNITS) {
    if (Math.abs(n) < size) return relative.format(Math.round(n), unit);
    n /= size;
  }
  return when(iso);
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** A status word (`processing`, `failed`) with a capital letter. */
export function label(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1).replaceAll('_', ' ');
}

/** The failure reasons an order can have, in words. */
const REASONS: Record<string, string> = {
  INSUFFICIENT_STOCK: 'Not enough stock',
  PRODUCT_UNAVAILABLE: 'A product is no longer available',
  TOTAL_TOO_LARGE: 'The total is larger than an order may be',
  PROCESSING_ERROR: 'Processing failed after every retry',
  CANCELLED: 'Cancelled',
};

export function reasonText(reason: string | null | undefined): string {
  if (!reason) return '';
  return REASONS[reason] ?? reason;
}

/** A datetime-local input's value (local time, to the second) for a moment. */
export function localInput(d: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
