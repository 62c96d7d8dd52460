import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { defineConfig, type Plugin } from 'vite';

const PUBLIC = path.resolve(import.meta.dirname, 'public');

/** Writes sw.js with the list of files it keeps (the page, the bundle, the public files) and a version made from them. */
function serviceWorker(): Plugin {
  return {
    name: 'montage-scanner-service-worker',
    apply: 'build',
    generateBundle(_options, bundle) {
      const built = Object.keys(bundle).filter((file) => file !== 'index.html');
      const files = ['/scanner/', ...fs.readdirSync(PUBLIC).map((f) => `/scanner/${f}`), ...built.map((f) => `/scanner/${f}`)].sort();
      const hash = createHash('sha256');
      for (const [name, chunk] of Object.entries(bundle).sort(([a], [b]) => a.localeCompare(b))) {
        hash.update(name).update(chunk.type === 'chunk' ? chunk.code : typeof chunk.source === 'string' ? chunk.source : Buffer.from(chunk.source));
      }
      for (const f of fs.readdirSync(PUBLIC).sort()) hash.update(f).update(fs.readFileSync(path.join(PUBLIC, f)));
      const source = fs
        .readFileSync(path.resolve(import.meta.dirname, 'sw.js'), 'utf8')
        .replace('__VERSION__', JSON.stringify(hash.digest('hex').slice(0, 16)))
        .replace('__FILES__', JSON.stringify(files));
      this.emitFile({ type: 'asset', fileName: 'sw.js', source });
    },
  };
}

// Built into dist/web/scanner and served by the API server under /scanner (src/dashboard/scanner.routes.ts).
export default defineConfig({
  root: import.meta.dirname,
  base: '/scanner/',
  plugins: [serviceWorker()],
  build: {
    outDir: path.resolve(import.meta.dirname, '../../dist/web/scanner'),
    emptyOutDir: true,
    // No inline module-preload polyfill: the page's Content-Security-Policy forbids inline scripts.
    modulePreload: { polyfill: false },
  },
});
