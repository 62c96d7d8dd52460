import { hash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { randomBase62 } from '../ids.js';

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number, options: object) => Promise<Buffer>;

export const API_KEY_PATTERN = /^mtg_[0-9A-Za-z]{40}$/;

/** A new API key: `mtg_` + 40 base62 characters (~238 bits). */
export function generateApiKey(): string {
  return `mtg_${randomBase62(40)}`;
}

/** A Standard Webhooks signing secret: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * Keys have 238 random bits, so a fast unsalted hash is enough to make a stolen table useless.
 * Every authenticated request hashes its key: the one-shot `hash` costs a third of a Hash object.
 */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

// OWASP's scrypt parameters: N=2^17, r=8, p=1 (128 MiB of memory per hash).
const N = 131072;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
const MAX_MEM = 256 * 1024 * 1024;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(password.normalize('NFKC'), salt, KEY_LENGTH, { N, r: R, p: P, maxmem: MAX_MEM });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scryptAsync(password.normalize('NFKC'), Buffer.from(salt, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: MAX_MEM,
  });
  return timingSafeEqual(expected, actual);
}
