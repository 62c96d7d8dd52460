import path from 'node:path';
import type { Config } from './config.js';
import type { DatabaseHandle } from './db/database.js';
import { isLoopbackHost } from './net/addresses.js';

/**
 * How to run the command line without fetching anything: `--no` forbids npx to download a package
 * named `montage` from the registry (an unrelated public one exists), `--` hands every option
 * after it, `--help` and `--version` too, to Montage rather than to npx. It works inside the checkout.
 */
export const CLI_INVOCATION = 'npx --no -- montage';

/** The checkout: the folder holding package.json, one level above src/ and dist/. */
export const PACKAGE_ROOT = path.resolve(import.meta.dirname, '..');

/** `text` as one shell word. */
export function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/** "SQLite /abs/montage.db" or "PostgreSQL postgres://host:port/db (schema s)": never a user or password. */
export function describeDatabase(handle: Pick<DatabaseHandle, 'engine' | 'location'>): string {
  return `${handle.engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'} ${handle.location}`;
}

const PASSWORD_MARK = 'MONTAGEPASSWORDMARK';

/**
 * The environment a command line run in the checkout needs to reach the server's database: nothing
 * for the default SQLite file, `DATA_DIR=...` for another, `DATABASE_URL=...` for PostgreSQL. A
 * password in the URL (user info or `?password=`) is replaced by `<password>`; `hidesPassword` says so.
 */
export function databaseEnvironment(config: Pick<Config, 'dataDir' | 'databaseUrl'>, root = PACKAGE_ROOT): { prefix: string; hidesPassword: boolean } {
  if (config.databaseUrl) {
    const url = new URL(config.databaseUrl);
    const hidesPassword = url.password !== '' || url.searchParams.has('password');
    if (url.password) url.password = PASSWORD_MARK;
    if (url.searchParams.has('password')) url.searchParams.set('password', PASSWORD_MARK);
    const shown = hidesPassword ? url.toString().replaceAll(PASSWORD_MARK, '<password>') : config.databaseUrl;
    return { prefix: `DATABASE_URL=${shellQuote(shown)} `, hidesPassword };
  }
  const dataDir = path.resolve(config.dataDir);
  return { prefix: dataDir === path.join(root, 'data') ? '' : `DATA_DIR=${shellQuote(dataDir)} `, hidesPassword: false };
}

/** Where /metrics is served, and to whom (src/http/metrics.ts decides the same). */
function metricsLine(config: Config): string {
  const auth = config.metricsToken ? ' (with Authorization: Bearer <MONTAGE_METRICS_TOKEN>)' : '';
  if (config.metricsPort !== null) {
    const host = config.metricsHost.includes(':') ? `[${config.metricsHost}]` : config.metricsHost;
    return `http://${host}:${config.metricsPort}/metrics${auth}`;
  }
  if (config.metricsToken || isLoopbackHost(config.host)) return `${config.publicUrl}/metrics${auth}`;
  return 'closed: this server listens beyond loopback; set MONTAGE_METRICS_TOKEN or MONTAGE_METRICS_PORT';
}

export interface BannerFacts {
  config: Config;
  database: Pick<DatabaseHandle, 'engine' | 'location'>;
  withWorker: boolean;
  accounts: number;
}

/** What `serve` prints once it listens: where everything is, and the exact commands for a key. */
export function startupBanner({ config, database, withWorker, accounts }: BannerFacts, root = PACKAGE_ROOT): string[] {
  const base = config.publicUrl;
  const lines = [
    '',
    `Montage is running (${database.engine}: ${database.location}${withWorker ? ', with workers' : ''})`,
    `  API       ${base}/v1   (also ${base}/api/v1)`,
    `  API docs  ${base}/docs   (OpenAPI: ${base}/openapi.json)`,
    `  Dashboard ${base}/dashboard   (sign in with an account made with --password)`,
    `  Health    ${base}/healthz  ${base}/readyz`,
    `  Metrics   ${metricsLine(config)}`,
  ];
  if (config.allowPrivateNetwork) {
    lines.push('  Private-network fetching is ON (MONTAGE_ALLOW_PRIVATE_NETWORK=1): image URLs and webhook deliveries may reach loopback and private addresses.');
  }
  const { prefix, hidesPassword } = databaseEnvironment(config, root);
  const montage = `${prefix}${CLI_INVOCATION}`;
  lines.push('');
  if (accounts === 0) {
    lines.push(
      'No accounts yet. Create one and its first API key in another terminal, in the checkout:',
      `  cd ${shellQuote(root)}`,
      `  ${montage} accounts create --email you@example.com --plan business`,
      `  KEY=$(${montage} keys create --email you@example.com | tail -n 1)`,
      `  curl -H "Authorization: Bearer $KEY" ${base}/v1/account`,
    );
  } else {
    lines.push('A new API key, in another terminal:', `  cd ${shellQuote(root)}`, `  ${montage} keys create --email E`);
  }
  if (hidesPassword) lines.push("  (<password> stands for the password in this server's DATABASE_URL, which is not printed.)");
  lines.push('');
  return lines;
}
