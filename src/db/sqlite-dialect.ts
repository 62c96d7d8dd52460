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
 * when another process (a worker) writes at the same time; and transactions of one turn of the
 * event loop commit together (Group, below).
 */
export class CachedSqliteDialect implements Dialect {
  private readonly driver: CachedSqliteDriver;

  /** `columnName`: how a result column's name becomes a property's (the Kysely plugins' own mapping). */
  constructor(database: SQLite.Database, columnName: (column: string) => string = (c) => c) {
    this.driver = new CachedSqliteDriver(database, columnName);
  }

  createDriver(): Driver {
    return this.driver;
  }
  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }
  createAdapter(): DialectAdapter {
    return new CachedSqliteAdapter(this.driver);
  }
  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}

/**
 * Group commit. COMMIT is the dearest statement of a small write transaction (it writes every page
 * the transaction touched to the WAL), and under load many such transactions arrive in one turn of
 * the event loop. So a transaction does not commit alone: the first one opens the physical
 * transaction (BEGIN IMMEDIATE) and each runs inside it as a savepoint, released on success and
 * rolled back to on failure, so one's failure never touches another's work. One COMMIT, queued
 * behind the transactions waiting at that moment, ends the group in the next turn of the loop
 * (setImmediate), and only then does each transaction's commit return, so nobody is told "done"
 * before its change is on disk. If that COMMIT fails, every transaction of the group fails with its
 * error: all or nothing, as each caller expects of its own transaction. A write outside any
 * transaction that lands inside an open group waits for the group's COMMIT the same way.
 *
 * What this changes for readers of the same process: a query may see a transaction's change that
 * has not been committed yet (its own group still open), which matters only if that COMMIT then
 * fails (a full disk). Other processes see committed data only.
 */
class Group {
  readonly done: Promise<void>;
  settle!: (error?: unknown) => void;
  constructor() {
    this.done = new Promise<void>((resolve, reject) => {
      this.settle = (error) => (error === undefined ? resolve() : reject(error));
    });
    // Nobody may be waiting on a group that fails before any member committed.
    this.done.catch(() => {});
  }
}

/**
 * The adapter carries the driver, so that `prepared()` queries (prepared.ts) can read at once: a
 * read outside any transaction, while nobody holds the connection, is run synchronously instead
 * of through Kysely's executor, connection lease and result plugins. Nothing waits in line then,
 * so no one is overtaken, and what it sees is what a read that took its turn would see. On the
 * hot paths (authentication, reading one resource) the executor costs more than SQLite's lookup.
 */
export class CachedSqliteAdapter extends SqliteAdapter {
  constructor(private readonly driver: CachedSqliteDriver) {
    super();
  }

  /** The rows of a read, with the plugins' property names; undefined for a write or when the connection is busy. */
  readNow<R>(sql: string, parameters: readonly unknown[]): R[] | undefined {
    return this.driver.readNow<R>(sql, parameters);
  }

  /**
   * Runs a statement, read or write, at once for the transaction that holds the connection (only
   * that transaction's code runs between its begin and its commit, so nothing is overtaken): its
   * rows as readNow names them, none for a write without RETURNING. Inside a transaction nothing
   * waits on a group either, so the executor's connection lease and result plugins are all that
   * this skips, and they cost more than a primary-key insert.
   */
  executeInTransaction<R>(sql: string, parameters: readonly unknown[]): R[] {
    return this.driver.executeInTransaction<R>(sql, parameters);
  }
}

/** One holder's turn on the single connection: a query, or a transaction from begin to release. */
class Lease implements DatabaseConnection {
  /** Set while this lease runs a transaction (between begin and commit or rollback). */
  group: Group | null = null;
  private released = false;

  constructor(
    private readonly driver: CachedSqliteDriver,
    private readonly connection: CachedSqliteConnection,
    private readonly releaseTurn: () => void,
  ) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.connection.executeQuery<R>(compiled);
    const group = this.driver.openGroup;
    // A lone write inside an open group is committed by that group: give the connection back, then wait for it.
    if (this.group === null && group !== null && result.numAffectedRows !== undefined) {
      this.release();
      await group.done;
    }
    return result;
  }

  streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    return this.connection.streamQuery<R>();
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.releaseTurn();
  }
}

class CachedSqliteDriver implements Driver {
  private readonly connection: CachedSqliteConnection;
  // SQLite has one connection; queries and transactions take turns on it, first come first served.
  private queue: Promise<void> = Promise.resolve();
  /** Holders of a turn and those waiting for one. */
  private holders = 0;
  /** The physical transaction that transactions are joining, until its COMMIT. */
  openGroup: Group | null = null;

  constructor(
    private readonly database: SQLite.Database,
    columnName: (column: string) => string,
  ) {
    this.connection = new CachedSqliteConnection(database, columnName);
  }

  readNow<R>(sql: string, parameters: readonly unknown[]): R[] | undefined {
    if (this.holders > 0) return undefined;
    return this.connection.readNow<R>(sql, parameters);
  }

  executeInTransaction<R>(sql: string, parameters: readonly unknown[]): R[] {
    if (this.openGroup === null || !this.database.inTransaction) throw new Error('executeInTransaction needs an open transaction');
    return this.connection.executeNow<R>(sql, parameters);
  }

  async init(): Promise<void> {}

  private async takeTurn(): Promise<() => void> {
    const previous = this.queue;
    let resolve!: () => void;
    this.queue = new Promise<void>((r) => {
      resolve = r;
    });
    this.holders++;
    await previous;
    return () => {
      this.holders--;
      resolve();
    };
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new Lease(this, this.connection, await this.takeTurn());
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const lease = connection as Lease;
    if (this.openGroup !== null && !this.database.inTransaction) {
      // A lone write's failure made SQLite roll the group back (a full disk, an I/O error).
      this.openGroup.settle(new Error('The transaction was rolled back by the database.'));
      this.openGroup = null;
    }
    if (this.openGroup === null) {
      this.run('begin immediate');
      const group = (this.openGroup = new Group());
      setImmediate(() => void this.commitGroup(group));
    }
    this.run('savepoint montage_tx');
    lease.group = this.openGroup;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const lease = connection as Lease;
    const group = lease.group!;
    this.run('release montage_tx');
    // The next transaction may join the group while this one waits for its COMMIT.
    lease.release();
    await group.done;
    lease.group = null;
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const lease = connection as Lease;
    const group = lease.group;
    lease.group = null;
    // Kysely rolls back a transaction whose commit failed: its group is gone already.
    if (group === null || group !== this.openGroup) return;
    if (this.database.inTransaction) {
      this.run('rollback to montage_tx');
      this.run('release montage_tx');
    } else {
      // SQLite rolled the whole physical transaction back itself (a full disk, an I/O error):
      // every transaction of the group is lost, and each is told so.
      this.openGroup = null;
      group.settle(new Error('The transaction was rolled back by the database.'));
    }
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as Lease).release();
  }

  /** Ends a group with one COMMIT, in its turn behind the holders waiting now. */
  private async commitGroup(group: Group): Promise<void> {
    const release = await this.takeTurn();
    try {
      if (this.openGroup !== group) return;
      this.openGroup = null;
      try {
        this.run('commit');
        group.settle();
      } catch (error) {
        if (this.database.inTransaction) this.run('rollback');
        group.settle(error);
      }
    } finally {
      release();
    }
  }

  private run(statement: string): void {
    this.connection.run(statement);
  }

  async destroy(): Promise<void> {
    // Wait for the holders in line and the open group's COMMIT, then close.
    const release = await this.takeTurn();
    if (this.openGroup) {
      const group = this.openGroup;
      this.openGroup = null;
      try {
        this.run('commit');
        group.settle();
      } catch (error) {
        group.settle(error);
      }
    }
    release();
    this.database.close();
  }
}

/** A read statement in raw mode (rows as arrays) and its properties' names, for readNow. */
interface RawRead {
  statement: SQLite.Statement;
  names: string[];
}

/** Raw rows (arrays of values) as objects with these property names. */
function named<R>(rows: unknown[][], names: string[]): R[] {
  const out = new Array<R>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const values = rows[i]!;
    const row: Record<string, unknown> = {};
    for (let c = 0; c < names.length; c++) row[names[c]!] = values[c];
    out[i] = row as R;
  }
  return out;
}

class CachedSqliteConnection implements DatabaseConnection {
  private readonly statements = new Map<string, SQLite.Statement>();
  /** readNow's statements (null: the SQL writes); kept apart, as raw mode is a statement's state. */
  private readonly rawReads = new Map<string, RawRead | null>();
  /** executeNow's statements: those that return rows in raw mode with their names, the others as they are. */
  private readonly rawStatements = new Map<string, RawRead | { statement: SQLite.Statement; names: null }>();

  constructor(
    private readonly database: SQLite.Database,
    private readonly columnName: (column: string) => string,
  ) {}

  /** Any statement, run now: its rows (a read, or a write's RETURNING) named as readNow names them; none for another write. */
  executeNow<R>(sql: string, parameters: readonly unknown[]): R[] {
    let entry = this.rawStatements.get(sql);
    if (entry === undefined) {
      const statement = this.database.prepare(sql);
      entry = statement.reader ? { statement: statement.raw(true), names: statement.columns().map((c) => this.columnName(c.name)) } : { statement, names: null };
      if (this.rawStatements.size >= STATEMENT_CACHE_SIZE) this.rawStatements.delete(this.rawStatements.keys().next().value!);
      this.rawStatements.set(sql, entry);
    }
    if (entry.names === null) {
      entry.statement.run(parameters as unknown[]);
      return [];
    }
    return named<R>(entry.statement.all(parameters as unknown[]) as unknown[][], entry.names);
  }

  readNow<R>(sql: string, parameters: readonly unknown[]): R[] | undefined {
    let read = this.rawReads.get(sql);
    if (read === undefined) {
      const statement = this.database.prepare(sql);
      // `reader` alone is also true of INSERT/UPDATE ... RETURNING: a write must take its turn (group commit).
      read = statement.reader && statement.readonly ? { statement: statement.raw(true), names: statement.columns().map((c) => this.columnName(c.name)) } : null;
      if (this.rawReads.size >= STATEMENT_CACHE_SIZE) this.rawReads.delete(this.rawReads.keys().next().value!);
      this.rawReads.set(sql, read);
    }
    if (read === null) return undefined;
    return named<R>(read.statement.all(parameters as unknown[]) as unknown[][], read.names);
  }

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

  /** A statement of transaction control, run at once. */
  run(statement: string): void {
    this.prepare(statement).run();
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const statement = this.prepare(compiled.sql);
    const parameters = compiled.parameters as unknown[];
    if (statement.reader) {
      const rows = statement.all(parameters) as R[];
      // INSERT/UPDATE/DELETE ... RETURNING is a reader too, and a write (Lease waits for its group):
      // each changed row is returned.
      return statement.readonly ? { rows } : { rows, numAffectedRows: BigInt(rows.length) };
    }
    const { changes } = statement.run(parameters);
    return { numAffectedRows: BigInt(changes), rows: [] };
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    // Montage reads large results in keyset-paged batches instead: the same code on both engines.
    throw new Error('streaming is not used with SQLite');
  }
}
