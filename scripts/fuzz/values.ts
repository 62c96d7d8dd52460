// Awkward values: the strings, numbers and dates that break parsers, databases and formatters.
// None of them contains what the leak check looks for (SQL statements, stack frames, server paths),
// so an error body that echoes one is never mistaken for a leak.
import fc from 'fast-check';

export const NASTY_STRINGS: readonly string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\uD800',
  'x\uDFFFy',
  '😀👍🏽‍♀️',
  '\u202Eevil\u202C',
  'مرحبا بالعالم',
  'שלום',
  '\u200B\u200C\u200D\uFEFF',
  'İstanbul ǅ ß ﬃ',
  'Z̴̡̛͓̠̼̻a̸l̷g̶o̵',
  '\r\n\t\u000b\u000c',
  '\u0085\u2028\u2029',
  '\u001b[31mred',
  '\u007f\u0001',
  '%',
  '%%',
  '_%_',
  '\\',
  '"',
  "'",
  "' OR '1'='1",
  "1; --",
  '${7*7}',
  '{{7*7}}',
  '<script>alert(1)</script>',
  '=1+1',
  '-1',
  '+1',
  '@SUM(1)',
  '..',
  '../../..',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  'true',
  '0',
  '-0',
  '1e308',
  '0x10',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'ＡＢＣ',
  '\uFFFD\uFFFE\uFFFF',
];

/** Dates ajv may or may not take, that a naive `new Date()` or the database may choke on. */
export const ODD_DATES: readonly string[] = [
  '2026-02-30T00:00:00Z',
  '2026-13-01T00:00:00Z',
  '2026-11-22T25:00:00Z',
  '2026-11-22T10:61:00Z',
  '2026-12-31T23:59:60Z',
  '2026-06-30T23:59:60.5Z',
  '2026-11-22t10:00:00z',
  '2026-11-22 10:00:00Z',
  '2026-11-22T10:00:00',
  '2026-11-22',
  '10:00:00Z',
  '2026-11-22T10:00:00+24:00',
  '2026-11-22T10:00:00+23:59',
  '2026-11-22T10:00:00-00:00',
  '2026-11-22T10:00:00.123456789Z',
  '2026-11-22T10:00:00.Z',
  '0000-01-01T00:00:00Z',
  '0001-01-01T00:00:00Z',
  '1000-01-01T00:00:00Z',
  '1900-01-01T00:00:00Z',
  '1969-12-31T23:59:59.999Z',
  '1970-01-01T00:00:00Z',
  '2038-01-19T03:14:08Z',
  '9999-12-31T23:59:59.999Z',
  '+275760-09-13T00:00:00Z',
  '-000001-01-01T00:00:00Z',
  '275760-09-13T00:00:00.001Z',
  'now',
  '',
  '0',
  '1795311601',
];

/** JSON values of every type, including the numbers that are hardest to get right. */
export const ODD_NUMBERS: readonly unknown[] = [
  0,
  -1,
  1.5,
  0.1 + 0.2,
  -0.000001,
  2 ** 31,
  2 ** 31 - 1,
  -(2 ** 31) - 1,
  2 ** 32,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53) - 2,
  1e21,
  1e308,
  -1e308,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  5e-324,
  '1',
  '1.5',
  '1e308',
  'NaN',
  'Infinity',
  '-Infinity',
  '-0',
  '0x10',
  ' 20',
];

export const ODD_JSON: readonly unknown[] = [null, true, false, 0, -1, 1e308, '', 'x', [], {}, [null], { '': null }, [[[]]], ...ODD_NUMBERS.slice(-6)];

/** Built once: making an arbitrary costs more than drawing from it. */
const once = <T>(make: () => T): (() => T) => {
  let made: T | undefined;
  return () => (made ??= make());
};

/** Any of the above, or random text from the whole of Unicode (lone surrogates included). */
export const oddString = once((): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
    { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
    { weight: 1, arbitrary: fc.constantFrom(...ODD_DATES) },
    { weight: 1, arbitrary: fc.constantFrom(300, 2049, 10_000, 100_000).chain((n) => fc.constantFrom('x', 'é', '😀', '\u0000').map((c) => c.repeat(n))) },
  ),
);

export const oddJson = once((): fc.Arbitrary<unknown> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...ODD_JSON) },
    { weight: 2, arbitrary: oddString() },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  ),
);

/** A TypeID suffix: 26 characters of Crockford base32. */
export const typeIdSuffix = once(() => fc.stringMatching(/^[0-9a-hjkmnp-tv-z]{26}$/));

/** A value nested `depth` levels deep, in arrays or objects. */
export function nested(depth: number, kind: 'array' | 'object'): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = kind === 'array' ? [value] : { a: value };
  return value;
}

/** The same nesting as JSON text, built without recursion (JSON.stringify of 100,000 levels overflows). */
export function nestedText(depth: number): string {
  return `${'['.repeat(depth)}1${']'.repeat(depth)}`;
}
