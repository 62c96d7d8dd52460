import { type Compilable, CompiledQuery, type Kysely, PostgresAdapter } from 'kysely';
import { CachedSqliteAdapter } from './sqlite-dialect.js';

type Slot = { arg: number } | { value: unknown };

/** PostgreSQL statements of the prepared queries, by their text: each connection parses and plans them once. */
const statementNames = new Map<string, string>();
/**
 * `select *`, `"t".*`, `returning *`. A named statement that says `*` fails with "cached plan must
 * not change result type" once a migration adds a column (the release's `migrate` runs while the
 * old processes still serve), so such queries stay unnamed: list the columns instead.
 */
const STAR = /(^|[\s,])("[^"]+"\.)?\*(?=[\s,]|$)/;

/** Whether `db` runs on PostgreSQL (where data-modifying CTEs save round trips SQLite does not cost). */
export const onPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter;

/** The server-side name of a prepared query's PostgreSQL statement, or undefined for any other SQL. */
export function statementName(sql: string): string | undefined {
  return statementNames.get(sql);
}

/**
 * A query of fixed shape, built and compiled by Kysely once and then run with new argument
 * values. Building and compiling costs more than running a primary-key lookup, so the hot
 * paths (authentication, reading one resource) use this; on PostgreSQL they are also named
 * statements, which each connection parses and plans once instead of on every run (see
 * database.ts); on SQLite a read on an idle connection, and any statement of a transaction, runs
 * at once on the connection, without Kysely's executor (sqlite-dialect.ts). `build` must use each argument as a
 * plain bound value (no `in` lists, no branching on it): the first call checks that every
 * argument reached the compiled parameters.
 */
export function prepared<DB, A extends unknown[], R>(build: (db: Kysely<DB>, ...args: A) => Compilable<R>) {
  // Keyed by the dialect's adapter: the same SQL serves the database and its transactions.
  const compiled = new WeakMap<object, { sql: string; slots: Slot[]; direct: boolean }>();
  const prepare = (db: Kysely<DB>, arity: number) => {
    const sentinels = Array.from({ length: arity }, (_, i) => `\u0000prepared-arg-${i}\u0000`);
    const query = build(db, ...(sentinels as unknown as A)).compile();
    const slots = query.parameters.map((value): Slot => {
      const arg = sentinels.indexOf(value as string);
      return arg >= 0 ? { arg } : { value };
    });
    const used = new Set(slots.flatMap((s) => ('arg' in s ? [s.arg] : [])));
    if (used.size !== arity) throw new Error(`prepared query uses ${used.size} of its ${arity} arguments as bound values`);
    const listsColumns = !STAR.test(query.sql);
    if (onPostgres(db) && listsColumns && !statementNames.has(query.sql)) statementNames.set(query.sql, `montage_${statementNames.size + 1}`);
    // A direct SQLite read names its columns once: a `*` could gain one under a running process.
    return { sql: query.sql, slots, direct: listsColumns };
  };
  return async (db: Kysely<DB>, ...args: A): Promise<R[]> => {
    const dialect = db.getExecutor().adapter;
    let entry = compiled.get(dialect);
    if (!entry) compiled.set(dialect, (entry = prepare(db, args.length)));
    const parameters = entry.slots.map((slot) => ('arg' in slot ? args[slot.arg] : slot.value));
    if (entry.direct && dialect instanceof CachedSqliteAdapter) {
      // In a transaction, which holds SQLite's one connection, any statement runs at once.
      if (db.isTransaction) return dialect.executeInTransaction<R>(entry.sql, parameters);
      const rows = dialect.readNow<R>(entry.sql, parameters);
      if (rows) return rows;
    }
    const result = await db.executeQuery<R>(CompiledQuery.raw(entry.sql, parameters));
    return result.rows;
  };
}

/**
 * `prepared` with named arguments, for statements with many: `build` reads them from one object
 * and the caller passes one object. `names` lists every argument once (the first call checks that
 * the caller passed no other); the same rules hold for each as for `prepared`'s.
 */
export function preparedNamed<P extends object, R, DB = any>(names: ReadonlyArray<NoInfer<keyof P> & string>, build: (db: Kysely<DB>, args: P) => Compilable<R>) {
  const run = prepared((db: Kysely<DB>, ...values: unknown[]) => build(db, Object.fromEntries(names.map((name, i) => [name, values[i]])) as P));
  let checked = false;
  return (db: Kysely<DB>, args: P): Promise<R[]> => {
    if (!checked) {
      const unnamed = Object.keys(args).filter((key) => !(names as readonly string[]).includes(key));
      if (unnamed.length > 0) throw new Error(`prepared query was passed ${unnamed.join(', ')}, which it does not name`);
      checked = true;
    }
    return run(db, ...names.map((name) => args[name as keyof P]));
  };
}
