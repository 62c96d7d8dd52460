/**
 * Recently authenticated keys, by key hash, for a few seconds: a hot key then costs no
 * database round trip. Revoking a key through this process clears the cache at once; a
 * revocation made elsewhere (another process, the command line) takes effect within the TTL.
 * Expiry is checked against the cached `expiresAt` on every request, so it stays exact.
 */
export class KeyCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(hash: string, now = Date.now()): V | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (entry.until <= now) {
      this.entries.delete(hash);
      return undefined;
    }
    return entry.value;
  }

  set(hash: string, value: V, now = Date.now()): void {
    if (this.ttlMs <= 0) return;
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(hash, { value, until: now + this.ttlMs });
  }

  clear(): void {
    this.entries.clear();
  }
}
