/** CSV (RFC 4180) for the exports: one record per line, CRLF-terminated. */

/** A cell that a spreadsheet would run as a formula starts with one of these (OWASP's CSV injection list). */
const FORMULA_START = /^[=+\-@\t\r]/;

/** One cell; a formula gets a leading `'`, which a spreadsheet shows and never runs. */
function cell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (FORMULA_START.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One record, its line break included. */
export function csvRecord(values: readonly (string | number | null | undefined)[]): string {
  return `${values.map(cell).join(',')}\r\n`;
}
