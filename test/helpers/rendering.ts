/** fast-check generators for the responses PostgreSQL renders as JSON (items and orders). */
import fc from 'fast-check';

/** Any text PostgreSQL can hold (no NUL), control characters and astral ones included. */
export const pgText = (maxLength: number) => fc.string({ unit: 'binary', maxLength }).map((s) => s.replaceAll('\0', ''));

/** An instant in years 1000–9999 as ISO text with microseconds, which the rendering drops as the parser does. */
export const instantWithMicros = fc
  .tuple(fc.integer({ min: Date.UTC(1000, 0, 1), max: Date.UTC(9999, 11, 31) }), fc.integer({ min: 0, max: 999 }))
  .map(([ms, us]) => new Date(ms).toISOString().replace('Z', `${String(us).padStart(3, '0')}Z`));
