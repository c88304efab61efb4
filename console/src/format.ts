/** How the console writes the API's values. */

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** A timestamp in the reader's time zone; an empty string for none. */
export function when(iso: string | null | undefined): string {
  return iso ? dateTime.format(new Date(iso)) : '';
}

/** An amount of money with its two decimals. */
export function money(amount: number): string {
  return amount.toFixed(2);
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
