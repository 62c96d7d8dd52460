/**
 * What is built the first time it is needed rather than when an app starts (response serializers,
 * http/serializers.ts; request validators, http/validation.ts), and the builds nobody has needed
 * yet, so that the tests can run every one of them and a build that fails shows there, not at a
 * user's first request.
 */
export class BuiltOnFirstUse<T> {
  private readonly pending = new Set<() => T>();

  /** A function that runs `make` at its first call (or at buildAll) and returns its result from then on. */
  once(make: () => T): () => T {
    let built: { value: T } | null = null;
    const build = (): T => {
      if (!built) {
        built = { value: make() };
        this.pending.delete(build);
      }
      return built.value;
    };
    this.pending.add(build);
    return build;
  }

  /** Runs every build not run yet; throws what a build throws. */
  buildAll(): void {
    for (const build of this.pending) build();
  }
}
