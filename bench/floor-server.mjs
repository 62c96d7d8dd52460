#!/usr/bin/env node
// The "bare floor": the least a Fastify server can do to answer a primary-key read, so the
// HTTP benchmark can say how much of it Montage keeps. One route, GET /items/:id, one
// SELECT by primary key; no auth, no hooks, no schemas, no logging.
//
// Environment:
//   FLOOR_ENGINE         sqlite | postgres
//   PORT                 port to listen on (127.0.0.1)
//   FLOOR_SQLITE_FILE    SQLite file (WAL, synchronous=NORMAL, as Montage opens it)
//   FLOOR_DATABASE_URL   PostgreSQL URL (a pg.Pool of FLOOR_POOL_SIZE, default 10 like Montage)
//   FLOOR_ROWS           rows seeded (default 1000)
import Fastify from 'fastify';

const engine = process.env.FLOOR_ENGINE;
const port = Number(process.env.PORT);
const rows = Number(process.env.FLOOR_ROWS || 1000);
const TABLE = 'bench_floor_items';

function seedRow(i) {
  return { id: i, name: `item ${i}`, prefix: `pfx_${String(i).padStart(4, '0')}`, created_at: 1_700_000_000_000 + i, payload: 'x'.repeat(64) };
}

async function openSqlite() {
  const { default: SQLite } = await import('better-sqlite3');
  const db = new SQLite(process.env.FLOOR_SQLITE_FILE);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`create table if not exists ${TABLE} (id integer primary key, name text not null, prefix text not null, created_at integer not null, payload text not null)`);
  const insert = db.prepare(`insert or replace into ${TABLE} (id, name, prefix, created_at, payload) values (@id, @name, @prefix, @created_at, @payload)`);
  db.transaction(() => {
    for (let i = 1; i <= rows; i++) insert.run(seedRow(i));
  })();
  const select = db.prepare(`select id, name, prefix, created_at, payload from ${TABLE} where id = ?`);
  return { get: async (id) => select.get(id), close: async () => db.close() };
}

async function openPostgres() {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: process.env.FLOOR_DATABASE_URL, max: Number(process.env.FLOOR_POOL_SIZE || 10) });
  pool.on('error', () => {});
  await pool.query(`create table if not exists ${TABLE} (id integer primary key, name text not null, prefix text not null, created_at bigint not null, payload text not null)`);
  await pool.query(`truncate ${TABLE}`);
  const values = Array.from({ length: rows }, (_, k) => seedRow(k + 1));
  await pool.query(
    `insert into ${TABLE} (id, name, prefix, created_at, payload)
     select * from unnest($1::int[], $2::text[], $3::text[], $4::bigint[], $5::text[])`,
    [values.map((r) => r.id), values.map((r) => r.name), values.map((r) => r.prefix), values.map((r) => r.created_at), values.map((r) => r.payload)],
  );
  await pool.query(`analyze ${TABLE}`);
  // A plain parameterised query, as Kysely sends them (no named prepared statement).
  const text = `select id, name, prefix, created_at, payload from ${TABLE} where id = $1`;
  return { get: async (id) => (await pool.query(text, [id])).rows[0], close: () => pool.end() };
}

const store = engine === 'sqlite' ? await openSqlite() : engine === 'postgres' ? await openPostgres() : null;
if (!store) {
  console.error('FLOOR_ENGINE must be sqlite or postgres');
  process.exit(2);
}

const app = Fastify({ logger: false });
app.get('/items/:id', async (request, reply) => {
  const id = Number(request.params.id);
  const row = Number.isInteger(id) ? await store.get(id) : undefined;
  if (!row) return reply.code(404).send({ error: 'not found' });
  return row;
});

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    if (stopping) return;
    stopping = true;
    await app.close();
    await store.close();
    process.exit(0);
  });
}

await app.listen({ port, host: '127.0.0.1' });
console.log(`floor (${engine}) listening on http://127.0.0.1:${port}`);
