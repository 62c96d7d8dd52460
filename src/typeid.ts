/**
 * TypeIDs as text and bytes: a prefix, "_", and the 128 bits of a UUID as 26 characters of
 * Crockford base32 (lower case), with two zero bits in front. Pure (no Node imports): the server
 * (src/ids.ts, signed ticket codes) and the scanner page (web/scanner) use the same code.
 */

export const TYPEID_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
export const TYPEID_SUFFIX = /^[0-7][0-9a-hjkmnp-tv-z]{25}$/;

const VALUES = new Int8Array(128).fill(-1);
for (let i = 0; i < TYPEID_ALPHABET.length; i++) VALUES[TYPEID_ALPHABET.charCodeAt(i)] = i;

/**
 * The 26 characters of 16 bytes. Bits enter an accumulator a byte at a time and leave it five at
 * a time (every request makes an ID, so this is a hot path).
 */
export function typeIdSuffix(bytes: Uint8Array): string {
  let out = '';
  let acc = 0;
  let bits = 2;
  for (let i = 0; i < 16; i++) {
    acc = (acc << 8) | bytes[i]!;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += TYPEID_ALPHABET[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return out;
}

/** The TypeID of `prefix` whose UUID is `bytes` (16 bytes). */
export const typeIdFromBytes = (prefix: string, bytes: Uint8Array) => `${prefix}_${typeIdSuffix(bytes)}`;

/** The 16 UUID bytes behind a TypeID (whatever its prefix), or null when `id` does not end in a TypeID suffix. */
export function typeIdBytes(id: string): Uint8Array | null {
  const suffix = id.slice(id.lastIndexOf('_') + 1);
  if (!TYPEID_SUFFIX.test(suffix)) return null;
  const out = new Uint8Array(16);
  let acc = 0;
  let bits = -2;
  let o = 0;
  for (let i = 0; i < suffix.length; i++) {
    acc = (acc << 5) | VALUES[suffix.charCodeAt(i)]!;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
    acc &= (1 << Math.max(bits, 0)) - 1;
  }
  return out;
}
