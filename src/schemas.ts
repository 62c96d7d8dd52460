import { type Static, type TSchema, type TUnsafe, Type } from 'typebox';

/** Shared field shapes of the API's schemas. */
export const Timestamp = Type.String({ format: 'date-time', maxLength: 64, examples: ['2026-11-22T10:00:00.000Z'] });
export const NullableTimestamp = Nullable(Timestamp);
export const Currency = Type.String({ pattern: '^[A-Z]{3}$', maxLength: 3, description: 'ISO 4217 code', examples: ['EUR'] });

/**
 * The currencies an event may sell in: the ISO 4217 codes of currencies in use (List One), without
 * the fund codes (BOV, CHE, CHW, CLF, COU, MXV, USN, UYI, UYW), precious metals (XAG, XAU, XPD,
 * XPT), units of account (XBA-XBD, XDR, XSU, XUA) and the testing and no-currency codes (XTS, XXX);
 * withdrawn codes (ANG, BGN, CUC, HRK, SLL, VEF, ZWL, ...) are refused. A fixed list, not
 * `Intl.supportedValuesOf('currency')`, whose answer follows the ICU data the Node build carries
 * (Node 20's still holds withdrawn codes and lacks VED): the same request gets the same answer on
 * every server.
 */
export const ISO_4217_CURRENCIES = [
  'AED', 'AFN', 'ALL', 'AMD', 'AOA', 'ARS', 'AUD', 'AWG', 'AZN', 'BAM', 'BBD', 'BDT', 'BHD', 'BIF', 'BMD', 'BND', 'BOB', 'BRL', 'BSD', 'BTN',
  'BWP', 'BYN', 'BZD', 'CAD', 'CDF', 'CHF', 'CLP', 'CNY', 'COP', 'CRC', 'CUP', 'CVE', 'CZK', 'DJF', 'DKK', 'DOP', 'DZD', 'EGP', 'ERN', 'ETB',
  'EUR', 'FJD', 'FKP', 'GBP', 'GEL', 'GHS', 'GIP', 'GMD', 'GNF', 'GTQ', 'GYD', 'HKD', 'HNL', 'HTG', 'HUF', 'IDR', 'ILS', 'INR', 'IQD', 'IRR',
  'ISK', 'JMD', 'JOD', 'JPY', 'KES', 'KGS', 'KHR', 'KMF', 'KPW', 'KRW', 'KWD', 'KYD', 'KZT', 'LAK', 'LBP', 'LKR', 'LRD', 'LSL', 'LYD', 'MAD',
  'MDL', 'MGA', 'MKD', 'MMK', 'MNT', 'MOP', 'MRU', 'MUR', 'MVR', 'MWK', 'MXN', 'MYR', 'MZN', 'NAD', 'NGN', 'NIO', 'NOK', 'NPR', 'NZD', 'OMR',
  'PAB', 'PEN', 'PGK', 'PHP', 'PKR', 'PLN', 'PYG', 'QAR', 'RON', 'RSD', 'RUB', 'RWF', 'SAR', 'SBD', 'SCR', 'SDG', 'SEK', 'SGD', 'SHP', 'SLE',
  'SOS', 'SRD', 'SSP', 'STN', 'SVC', 'SYP', 'SZL', 'THB', 'TJS', 'TMT', 'TND', 'TOP', 'TRY', 'TTD', 'TWD', 'TZS', 'UAH', 'UGX', 'USD', 'UYU',
  'UZS', 'VED', 'VES', 'VND', 'VUV', 'WST', 'XAF', 'XCD', 'XCG', 'XOF', 'XPF', 'YER', 'ZAR', 'ZMW', 'ZWG',
] as const;

const CURRENCY_CODE_PATTERN = `^(?:${ISO_4217_CURRENCIES.join('|')})$`;

/**
 * Patterns whose plain failure message ("must match pattern ...") would say nothing to a client,
 * with what the 400's `errors[].message` says instead (http/problem.ts).
 */
export const PATTERN_MESSAGES: Record<string, string> = {};

/** A currency as a request gives it: one of ISO_4217_CURRENCIES (docs/events.md, "Currencies"). */
export const CurrencyCode = Type.String({ pattern: CURRENCY_CODE_PATTERN, maxLength: 3, description: 'ISO 4217 code of a currency in use (docs/events.md, "Currencies")', examples: ['EUR'] });
PATTERN_MESSAGES[CURRENCY_CODE_PATTERN] = 'must be the ISO 4217 code of a currency in use, such as EUR, USD or JPY';

/**
 * At least one visible character: whitespace, control characters and invisible format characters
 * (zero-width spaces and joiners, direction marks, the byte-order mark) do not count. Written with
 * \u escapes only, so that it means the same with and without a regular expression's `u` flag.
 */
const VISIBLE_PATTERN = '[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u206f\\u3164\\ufe00-\\ufe0f\\ufeff\\uffa0]';
PATTERN_MESSAGES[VISIBLE_PATTERN] = 'must contain a visible character';

/**
 * A name of something (an event, a ticket type, a person, a list, a key): 1 to `maxLength`
 * characters, at least one of them visible. It is kept as given, surrounding spaces included
 * (docs/api.md, "Names").
 */
export const VisibleText = (maxLength: number, options: Record<string, unknown> = {}) => Type.String({ minLength: 1, maxLength, pattern: VISIBLE_PATTERN, ...options });

export const Money = Type.Integer({ format: 'int64', minimum: 0, maximum: 100_000_000_00, description: 'Integer minor units (cents)', examples: [2500] });
export const Email = Type.String({ format: 'email', maxLength: 254, examples: ['ada@example.com'] });
export const Name = VisibleText(200, { description: 'At least one visible character; kept as given.' });
export const Person = Type.Object({ name: Name, email: Email }, { additionalProperties: false });
/** An id in a path. (No id is longer than the router takes, MAX_PARAM_LENGTH in app.ts: a longer one is 404 before this.) */
export const PathId = (description?: string) => Type.String({ maxLength: 500, ...(description ? { description } : {}) });
export const IdParam = (description: string) => Type.Object({ id: PathId(description) }, { additionalProperties: false });

/**
 * A schema of one type, or null, as one type list (`type: ['string', 'null']`) rather than an
 * `anyOf`: the response serialiser writes such a value directly, where an `anyOf` makes it run a
 * validator (formats included) on every value of every response.
 */
export function Nullable<T extends TSchema & { type: string }>(schema: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<Static<T> | null>({ ...schema, ...options, type: [schema.type, 'null'] });
}

/** One of fixed strings, as `{ type: 'string', enum }`: serialised directly, where an `anyOf` of literals is validated. */
export function StringEnum<const T extends readonly string[]>(values: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<T[number]>({ ...options, type: 'string', enum: [...values] });
}

/**
 * A reference to a named schema (one with an `$id`, registered with the app: see http/openapi.ts),
 * typed as the schema itself. The OpenAPI document shows it as `#/components/schemas/<$id>`.
 */
export function ref<T extends TSchema>(schema: T): TUnsafe<Static<T>> {
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id !== 'string') throw new Error('ref() needs a schema with an $id');
  return Type.Unsafe<Static<T>>({ $ref: `${id}#` });
}
