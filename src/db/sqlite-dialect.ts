import type SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';

const STATEMENT_CACHE_SIZE = 500;

/**
 * better-sqlite3 behind Kysely, as Kysely's own SqliteDialect but with two changes:
 * prepared statements are cached (preparing costs more than running a primary-key lookup),
 * and transactions start with BEGIN IMMEDIATE, so a transaction that reads and then writes
 * takes the write lock up front and waits (busy_timeout) instead of failing with SQLITE_BUSY
 * when another process (a worker) writes at the same time.
 */
export class CachedSqliteDialect implements Dialect {
  constructor(private readonly database: SQLite.Database) {}

  createDriver(): Driver {
    return new CachedSqliteDriver(this.database);
  }
  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }
  createAdapter(): DialectAdapter {
    return new SqliteAdapter();
  }
  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}

class CachedSqliteDriver implements Driver {
  private readonly connection: CachedSqliteConnection;
  // SQLite has one connection; queries and transactions take turns on it.
  private queue: Promise<void> = Promise.resolve();
  private release: (() => void) | null = null;

  constructor(private readonly database: SQLite.Database) {
    this.connection = new CachedSqliteConnection(database);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const previous = this.queue;
    let release!: () => void;
    this.queue = new Promise<void>((resolve) => {
      release = resolve;
    });
    await previous;
    this.release = release;
    return this.connection;
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }
  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }
  async releaseConnection(): Promise<void> {
    const release = this.release;
    this.release = null;
    release?.();
  }
  async destroy(): Promise<void> {
    this.database.close();
  }
}

class CachedSqliteConnection implements DatabaseConnection {
  private readonly statements = new Map<string, SQLite.Statement>();

  constructor(private readonly database: SQLite.Database) {}

  private prepare(sql: string): SQLite.Statement {
    let statement = this.statements.get(sql);
    if (statement) {
      // Refresh its place: the map's order is least recently used first.
      this.statements.delete(sql);
    } else {
      statement = this.database.prepare(sql);
      if (this.statements.size >= STATEMENT_CACHE_SIZE) this.statements.delete(this.statements.keys().next().value!);
    }
    this.statements.set(sql, statement);
    return statement;
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const statement = this.prepare(compiled.sql);
    const parameters = compiled.parameters as unknown[];
    if (statement.reader) return { rows: statement.all(parameters) as R[] };
    const { changes } = statement.run(parameters);
    return { numAffectedRows: BigInt(changes), rows: [] };
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    // Montage reads large results in keyset-paged batches instead: the same code on both engines.
    throw new Error('streaming is not used with SQLite');
  }
}
