import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The sample images the server ships (`samples/` at the repository root; its README names their
 * sources and licences): served at `GET /samples/<name>`, and read from disk, never fetched, when
 * a blend job names them by the server's own address. A first blend job so completes on a machine
 * with no network, without opening the fetcher to loopback addresses.
 */
export const SAMPLES_DIR = fileURLToPath(new URL('../../samples/', import.meta.url));

const NAME = /^[a-z0-9][a-z0-9-]*\.(jpg|png)$/;

export interface Sample {
  name: string;
  bytes: number;
  contentType: string;
}

let cached: Sample[] | null = null;

/** The shipped samples, by name (read once: the folder is part of the installation). */
export function listSamples(): Sample[] {
  cached ??= fs
    .readdirSync(SAMPLES_DIR)
    .filter((name) => NAME.test(name))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
    .map((name) => ({ name, bytes: fs.statSync(path.join(SAMPLES_DIR, name)).size, contentType: name.endsWith('.png') ? 'image/png' : 'image/jpeg' }));
  return cached;
}

/** `publicUrl` + `/samples/`: the address under which the samples are served, and read as files. */
export function samplesBase(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/samples/`;
}

/**
 * The sample `url` names, when it is the server's own address of a sample (`samplesBase`; no
 * query, no fragment); `undefined` for any other URL. A URL under the samples' address that names
 * no sample is `null`: it is refused, never fetched.
 */
export function sampleOf(url: string, publicUrl: string): Sample | null | undefined {
  let parsed: URL;
  let base: URL;
  try {
    parsed = new URL(url);
    base = new URL(samplesBase(publicUrl));
  } catch {
    return undefined;
  }
  if (parsed.origin !== base.origin || !parsed.pathname.startsWith(base.pathname) || parsed.search || parsed.hash || parsed.username || parsed.password) return undefined;
  const name = parsed.pathname.slice(base.pathname.length);
  return listSamples().find((s) => s.name === name) ?? null;
}

/** A sample's bytes. */
export function readSample(sample: Sample): Promise<Buffer> {
  return fs.promises.readFile(path.join(SAMPLES_DIR, sample.name));
}
