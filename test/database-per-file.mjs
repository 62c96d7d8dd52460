// Loaded by scripts/test.mjs (`--import`) into every test file's process before the file runs: a
// PostgreSQL database of the file's own, made on the run's server and named after the run's
// database and the process (scripts/test.mjs drops them all after the run), in TEST_DATABASE_URL.
//
// Files run two at a time, and each test keeps its tables in a schema of its own (helpers.ts,
// freshStorage), dropped when the test ends. In one shared database a schema dropped by one file
// while another file's migrator reads the catalog of every schema (Kysely's introspection resolves
// each table's name) failed that migration with 'schema "t_..." does not exist'. With a database
// per file, the files running together share no catalog.
import pg from 'pg';

if (process.env.NODE_TEST_CONTEXT && process.env.TEST_DATABASE_URL) {
  const url = new URL(process.env.TEST_DATABASE_URL);
  // The pid and the time: a later file's process may be given an earlier one's pid.
  const name = `${url.pathname.slice(1)}_${process.pid}_${Date.now().toString(36)}`;
  const client = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
  url.pathname = `/${name}`;
  process.env.TEST_DATABASE_URL = url.toString();
}
