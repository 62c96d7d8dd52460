import { invalid } from './errors.js';

/** Epoch milliseconds to the API's timestamp form (ISO 8601, UTC, `Z`). */
export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/**
 * An API timestamp (already shaped as ISO 8601 by the schema) as epoch milliseconds. A shape
 * the schema admits but no clock has (a leap second, `23:59:60Z`) is a 400 naming `path`.
 */
export function parseTime(text: string, path: string): number {
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw invalid(path, 'is not a time this server can represent');
  return ms;
}
