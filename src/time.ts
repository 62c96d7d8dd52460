import { invalid } from './errors.js';

const DAY_MS = 86_400_000;
/** 10000-01-01T00:00:00Z: from there on toISOString writes a six-digit year. */
const YEAR_10000_MS = 253_402_300_800_000;
const TWO_DIGITS = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));
const MAX_CACHED_DAYS = 4096;
/** `YYYY-MM-DDT` of each day seen lately, by day number since the epoch. */
const dayPrefixes = new Map<number, string>();

/**
 * Epoch milliseconds to the API's timestamp form (ISO 8601, UTC, `Z`), exactly as
 * `Date#toISOString` writes it. Every resource a response holds has a few timestamps (a page of
 * attendees, an export: hundreds of thousands), and toISOString costs about a microsecond, so
 * the date part is cached per day and the time of day written from tables.
 */
export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
  if (ms === null) return null;
  if (!Number.isInteger(ms) || ms < 0 || ms >= YEAR_10000_MS) return new Date(ms).toISOString();
  const day = Math.floor(ms / DAY_MS);
  let prefix = dayPrefixes.get(day);
  if (prefix === undefined) {
    if (dayPrefixes.size >= MAX_CACHED_DAYS) dayPrefixes.clear();
    prefix = new Date(day * DAY_MS).toISOString().slice(0, 11);
    dayPrefixes.set(day, prefix);
  }
  let rest = ms - day * DAY_MS;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  return `${prefix}${TWO_DIGITS[hours]}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]}.${THREE_DIGITS[rest - seconds * 1000]}Z`;
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
