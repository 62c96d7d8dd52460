import type { DeleteQueryBuilder, DeleteResult, SelectQueryBuilder, UpdateQueryBuilder, UpdateResult } from 'kysely';
import type { Database, Db, Tx } from './database.js';
import { transaction } from './transaction.js';

/** Tables whose rows belong to one account. */
export type TenantTable = {
  [K in keyof Database]: Database[K] extends { accountId: string } ? K : never;
}[keyof Database];

/**
 * The only way services reach an account's rows: every query it starts is already
 * restricted to that account, so another account's resource is simply not found.
 */
export class TenantScope {
  constructor(
    readonly db: Db | Tx,
    readonly accountId: string,
  ) {}

  selectFrom<T extends TenantTable>(table: T): SelectQueryBuilder<Database, T, {}> {
    return (this.db.selectFrom(table) as any).where(`${table}.accountId`, '=', this.accountId);
  }

  updateTable<T extends TenantTable>(table: T): UpdateQueryBuilder<Database, T, T, UpdateResult> {
    return (this.db.updateTable(table) as any).where(`${table}.accountId`, '=', this.accountId);
  }

  deleteFrom<T extends TenantTable>(table: T): DeleteQueryBuilder<Database, T, DeleteResult> {
    return (this.db.deleteFrom(table) as any).where(`${table}.accountId`, '=', this.accountId);
  }

  /** Runs `work` in one transaction, with a scope bound to it. */
  transaction<R>(work: (scope: TenantScope) => Promise<R>): Promise<R> {
    if (this.db.isTransaction) return work(this);
    return transaction(this.db as Db, (tx) => work(new TenantScope(tx, this.accountId)));
  }
}
