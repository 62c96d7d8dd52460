/** Epoch milliseconds to the API's timestamp form (ISO 8601, UTC, `Z`). */
export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
