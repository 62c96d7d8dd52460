/**
 * Many small writes as few statements: the first item is written at once, and the items that
 * arrive while that write is under way wait for the next, which takes them all (up to `max`). A
 * busy caller thus spends one round trip on dozens of items, an idle one adds no delay. Each
 * item's promise settles when the statement that holds it has: all of a statement's items
 * succeed or fail together.
 */
export class WriteBatcher<T> {
  private waiting: Array<{ item: T; resolve: () => void; reject: (err: unknown) => void }> = [];
  private writing = false;

  constructor(
    private readonly write: (items: T[]) => Promise<unknown>,
    private readonly max = 500,
  ) {}

  add(item: T): Promise<void> {
    const written = new Promise<void>((resolve, reject) => this.waiting.push({ item, resolve, reject }));
    if (!this.writing) void this.drain();
    return written;
  }

  private async drain(): Promise<void> {
    this.writing = true;
    while (this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.max);
      try {
        await this.write(batch.map((b) => b.item));
        for (const b of batch) b.resolve();
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    this.writing = false;
  }
}

/**
 * Lookups by key asked for in one turn of the event loop, answered by one query: a worker that
 * starts thirty jobs at once reads their thirty rows in one round trip. `read` gets the distinct
 * keys and returns the rows it found with their keys; a key it did not find resolves to undefined.
 */
export class ReadBatcher<K, V> {
  private pending = new Map<K, Array<{ resolve: (value: V | undefined) => void; reject: (err: unknown) => void }>>();

  constructor(
    private readonly read: (keys: K[]) => Promise<Map<K, V>>,
    private readonly max = 500,
  ) {}

  load(key: K): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      if (this.pending.size === 0) process.nextTick(() => void this.flush());
      const waiters = this.pending.get(key);
      if (waiters) waiters.push({ resolve, reject });
      else this.pending.set(key, [{ resolve, reject }]);
    });
  }

  private async flush(): Promise<void> {
    const all = this.pending;
    this.pending = new Map();
    const keys = [...all.keys()];
    await Promise.all(
      Array.from({ length: Math.ceil(keys.length / this.max) }, async (_, i) => {
        const slice = keys.slice(i * this.max, (i + 1) * this.max);
        try {
          const found = await this.read(slice);
          for (const key of slice) for (const w of all.get(key)!) w.resolve(found.get(key));
        } catch (err) {
          for (const key of slice) for (const w of all.get(key)!) w.reject(err);
        }
      }),
    );
  }
}
