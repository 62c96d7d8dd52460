export interface AccountTable {
  id: string;
  /** Lower-cased; unique. */
  email: string;
  plan: string;
  /** `scrypt$N$r$p$salt$hash`, or null for accounts that only use API keys. */
  passwordHash: string | null;
  /** `whsec_...`: signs webhook deliveries that have no subscription (a blend job's own webhookUrl). */
  webhookSecret: string | null;
  /** The secret `webhookSecret` replaced at its last rotation; signs beside it until `previousWebhookSecretUntil`. */
  previousWebhookSecret: string | null;
  previousWebhookSecretUntil: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface ApiKeyTable {
  id: string;
  accountId: string;
  name: string;
  /** First 8 characters of the key, for display. */
  prefix: string;
  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  keyHash: string;
  /** JSON array of scopes, or null for a key with every scope. */
  scopes: string | null;
  createdAt: number;
  lastUsedAt: number | null;
  expiresAt: number | null;
  revokedAt: number | null;
}

// The tables of this file, in the database's type (db/database.ts).
declare module '../db/database.js' {
  interface Database {
    accounts: AccountTable;
    apiKeys: ApiKeyTable;
  }
}
