import type { Kysely } from 'kysely';

// Frozen in time: this file imports nothing from the app. Account emails are now compared after
// NFKC normalisation (fullwidth `ａ@x.test` is `a@x.test`), then lower-cased and trimmed
// (accounts.service.ts, canonicalEmail). Rows stored before then were only lower-cased and trimmed:
// this brings them to the new form, so that sign-in and the command line find them.
//
// Two accounts may now have the same email (`ａ@x.test` and `a@x.test`), which the unique index
// on the column forbids. Which of them the person who signs in owns is not for a migration to
// guess: it fails, naming every such pair, and changes nothing. The operator gives one of each
// pair another email (`update accounts set email = ... where id = ...`) and starts again.
const canonical = (email: string) => email.normalize('NFKC').trim().toLowerCase();

const BATCH = 10_000;

export async function up(db: Kysely<any>): Promise<void> {
  const changes: Array<{ id: string; from: string; to: string }> = [];
  let after = '';
  for (;;) {
    const rows: Array<{ id: string; email: string }> = await db
      .selectFrom('accounts')
      .select(['id', 'email'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    for (const row of rows) {
      const to = canonical(row.email);
      if (to !== row.email) changes.push({ id: row.id, from: row.email, to });
    }
    if (rows.length < BATCH) break;
    after = rows[rows.length - 1]!.id;
  }
  if (changes.length === 0) return;

  const clashes: string[] = [];
  const claimed = new Map<string, { id: string; from: string }>();
  for (const change of changes) {
    const holder = await db.selectFrom('accounts').select(['id', 'email']).where('email', '=', change.to).executeTakeFirst();
    const other = holder ?? claimed.get(change.to);
    if (other) clashes.push(`${change.id} (${change.from}) and ${other.id} (${'email' in other ? other.email : other.from})`);
    else claimed.set(change.to, change);
  }
  if (clashes.length > 0) {
    throw new Error(
      `${clashes.length} pair(s) of accounts have the same email once normalised (NFKC, lower case): ${clashes.join('; ')}. ` +
        'Give one account of each pair another email (update accounts set email = ... where id = ...), then start again.',
    );
  }
  for (const change of changes) {
    await db.updateTable('accounts').set({ email: change.to }).where('id', '=', change.id).execute();
  }
}

export async function down(): Promise<void> {
  // The emails' earlier forms are not kept; the normalised ones are valid for the earlier code too.
}
