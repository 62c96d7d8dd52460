import path from 'node:path';
import { defineConfig } from 'vite';

// Built into dist/web/dashboard (dist/dashboard is the server's compiled src/dashboard) and
// served by the API server under /dashboard/.
export default defineConfig({
  root: import.meta.dirname,
  base: '/dashboard/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: path.resolve(import.meta.dirname, '../../dist/web/dashboard'),
    emptyOutDir: true,
    // No inline module-preload polyfill: the page's Content-Security-Policy forbids inline scripts.
    modulePreload: { polyfill: false },
  },
});
