import type { Db, Tx } from './database.js';

/** What each open transaction asked to run once it has committed. */
const hooks = new WeakMap<object, Array<() => void>>();

/**
 * Runs `fn` once the work done through `db` is committed: at once outside a transaction, after
 * COMMIT inside one started by `transaction()` (never if it rolls back). Registering the same
 * function twice in one transaction runs it once.
 */
export function afterCommit(db: Db | Tx, fn: () => void): void {
  if (!db.isTransaction) return fn();
  let list = hooks.get(db);
  if (!list) hooks.set(db, (list = []));
  if (!list.includes(fn)) list.push(fn);
}

/** `db.transaction().execute(work)`, then what its work registered with `afterCommit`. */
export async function transaction<R>(db: Db, work: (tx: Tx) => Promise<R>): Promise<R> {
  let opened: Tx | null = null;
  const result = await db.transaction().execute((tx) => {
    opened = tx;
    return work(tx);
  });
  const list = opened ? hooks.get(opened) : undefined;
  if (list) {
    hooks.delete(opened!);
    for (const fn of list) {
      // The work is committed: a hook's failure must not make the caller think otherwise.
      try {
        fn();
      } catch (err) {
        process.emitWarning(`an after-commit hook failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
  return result;
}
