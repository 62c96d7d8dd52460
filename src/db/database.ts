import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { CamelCasePlugin, Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { Checkpointer } from './checkpointer.js';
import { statementName } from './prepared.js';
import { CachedSqliteDialect } from './sqlite-dialect.js';

/**
 * Every table, by its name in queries. Each is declared beside its owner, in a `*.table.ts` that
 * adds its tables to this interface (`declare module '../db/database.js'`): the database layer
 * names no area.
 */
export interface Database {}

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
export type Engine = 'sqlite' | 'postgres';

export interface DatabaseHandle {
  db: Db;
  engine: Engine;
  /** Human-readable location, without credentials. */
  location: string;
  /** PostgreSQL schema named by `?schema=` in the URL, else null (the default search path). */
  schema: string | null;
  close(): Promise<void>;
}

// int8 (counts, epoch milliseconds) and numeric (SUM of int8) come back from pg as strings;
// every such value Montage stores fits in a double.
const PG_NUMBER_TYPES = new Set([20, 1700]);
const pgTypes = {
  getTypeParser: ((oid: number, format?: string) =>
    PG_NUMBER_TYPES.has(oid) ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

export interface OpenOptions {
  dataDir: string;
  databaseUrl: string | null;
  poolSize?: number;
}

/**
 * A pg client that runs the prepared queries (db/prepared.ts) as named statements: parsed and
 * planned once per connection, then only bound and executed. Other SQL runs as before (unnamed),
 * so statements of varying text (IN lists) never pile up on the server.
 */
class PreparingClient extends pg.Client {
  override query(...args: unknown[]): never {
    const [text, values] = args;
    const name = typeof text === 'string' && (args.length === 1 || Array.isArray(values)) ? statementName(text) : undefined;
    const run = super.query as (...a: unknown[]) => never;
    return name ? run.call(this, { name, text, values }, ...args.slice(2)) : run.apply(this, args);
  }
}

/**
 * SQLite (better-sqlite3, WAL) in `dataDir` unless `databaseUrl` names PostgreSQL.
 * A `?schema=NAME` parameter on the PostgreSQL URL puts every table in that schema.
 */
/** The CamelCasePlugin, with its mapping of a column's name open to the SQLite dialect's direct reads. */
class CamelCase extends CamelCasePlugin {
  name(column: string): string {
    return this.camelCase(column);
  }
}

export function openDatabase(options: OpenOptions): DatabaseHandle {
  const camelCase = new CamelCase();
  const plugins = [camelCase];
  if (options.databaseUrl) {
    const url = new URL(options.databaseUrl);
    const schema = url.searchParams.get('schema');
    url.searchParams.delete('schema');
    if (schema !== null && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
      throw new Error('DATABASE_URL: schema must be a lower-case SQL identifier');
    }
    const pool = new pg.Pool({
      Client: PreparingClient,
      connectionString: url.toString(),
      max: options.poolSize ?? 10,
      types: pgTypes,
      ...(schema ? { options: `-c search_path=${schema}` } : {}),
    });
    // A client that loses its connection (a restarted server, a terminated backend) must not crash
    // the process: idle ones report it to the pool, checked-out ones to themselves, where pg-pool
    // leaves no listener; the query in flight fails, and the pool drops the client on release.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), plugins });
    return {
      db,
      engine: 'postgres',
      schema,
      location: `postgres://${url.host}${url.pathname}${schema ? ` (schema ${schema})` : ''}`,
      close: () => db.destroy(),
    };
  }
  fs.mkdirSync(options.dataDir, { recursive: true });
  const file = path.join(options.dataDir, 'montage.db');
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  // SQLite's own lower() folds ASCII letters only, PostgreSQL's every script: a search (`q`) must
  // find "ÉMILE" by "émile" on both (see caseFold in events.repository.ts). A final sigma folds as
  // any sigma, so that "ΟΔΥΣ" (which JavaScript lowers to "οδυς") finds "ΟΔΥΣΣΕΥΣ".
  sqlite.function('unicode_lower', { deterministic: true }, (value: unknown) =>
    value === null ? null : (Buffer.isBuffer(value) ? value.toString('utf8') : String(value)).toLowerCase().replaceAll('ς', 'σ'),
  );
  // Checkpoints run on a thread of their own, never inside a request's COMMIT (checkpointer.ts).
  const checkpointer = new Checkpointer(sqlite, file);
  const db = new Kysely<Database>({ dialect: new CachedSqliteDialect(sqlite, (column) => camelCase.name(column)), plugins });
  return {
    db,
    engine: 'sqlite',
    location: file,
    schema: null,
    close: async () => {
      await checkpointer.close();
      await db.destroy();
    },
  };
}

/** Creates the schema named in a PostgreSQL URL's `?schema=` if it does not exist yet. */
export async function ensureSchema(handle: DatabaseHandle): Promise<void> {
  if (handle.schema) await sql`create schema if not exists ${sql.id(handle.schema)}`.execute(handle.db);
}

// SQLSTATEs of a connection that is gone or refused: class 08 (connection exception) and
// 57P01-57P03 (terminated by an administrator, a server crash, a server starting or stopping).
const CONNECTION_SQLSTATE = /^(08...|57P0[1-3])$/;
const CONNECTION_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
// pg reports a lost connection with a plain Error and one of these messages.
const CONNECTION_MESSAGE = /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect)/;

/**
 * Whether `err` says the database cannot be reached (a lost or refused connection), rather than
 * that a query was wrong: the request may succeed if it is tried again in a moment.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (CONNECTION_SQLSTATE.test(code) || CONNECTION_ERRNO.has(code))) return true;
  return CONNECTION_MESSAGE.test(err.message);
}

export async function ping(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}
