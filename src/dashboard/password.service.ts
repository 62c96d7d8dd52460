import { type AccountRow, findAccountByEmail, findPassword, setPasswordHash } from '../accounts/accounts.repository.js';
import { hashPassword, verifyPassword } from '../accounts/secrets.js';
import type { Db } from '../db/database.js';
import { AppError, invalid } from '../errors.js';
import { deleteAccountSessions } from './dashboard.repository.js';
import type { Session } from './sessions.service.js';

export const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 1024;

const WRONG_CREDENTIALS = 'The email or the password is wrong.';

// Unknown emails are checked against this hash too, so both failures take the same time.
let decoy: Promise<string> | null = null;
const decoyHash = () => (decoy ??= hashPassword('montage-decoy-password'));

/** The account whose password this is (`email` canonical already), else 401 in the same time either way. */
export async function checkCredentials(db: Db, email: string, password: string): Promise<AccountRow> {
  const account = await findAccountByEmail(db, email);
  const matches = await verifyPassword(password, account?.passwordHash ?? (await decoyHash()));
  if (!account?.passwordHash || !matches) throw new AppError('unauthorized', WRONG_CREDENTIALS);
  return account;
}

/**
 * Changes the session's account password, in a fixed order: (1) the current password is the
 * account's, (2) the new one differs from it and from the email; then (3) one transaction stores
 * the new hash, only if the hash checked in (1) is still the stored one (two changes at once: one
 * wins, the other is a 409), and signs out every other session of the account.
 */
export async function changePassword(db: Db, session: Session, current: string, next: string): Promise<void> {
  const account = await findPassword(db, session.accountId);
  if (!account?.passwordHash) throw new AppError('unauthorized', 'This account has no password: it cannot use the dashboard.');
  if (!(await verifyPassword(current, account.passwordHash))) throw invalid('/currentPassword', 'is not the password of this account');
  if (next.normalize('NFKC') === current.normalize('NFKC')) throw invalid('/newPassword', 'must differ from the current password');
  if (next.trim().toLowerCase() === account.email) throw invalid('/newPassword', 'must not be the email address');
  const hash = await hashPassword(next);
  const now = Date.now();
  await db.transaction().execute(async (tx) => {
    if (!(await setPasswordHash(tx, session.accountId, hash, now, account.passwordHash))) {
      throw new AppError('conflict', 'The password was changed meanwhile; sign in again with the new one.');
    }
    await deleteAccountSessions(tx, session.accountId, session.id);
  });
}

/**
 * The operator's way (command line) to give an account a password, or a new one when its owner
 * lost it: no current password asked; every dashboard session of the account ends.
 */
export async function setPassword(db: Db, accountId: string, password: string): Promise<void> {
  if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    throw invalid('--password', `must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`);
  }
  const hash = await hashPassword(password);
  await db.transaction().execute(async (tx) => {
    await setPasswordHash(tx, accountId, hash, Date.now());
    await deleteAccountSessions(tx, accountId);
  });
}
