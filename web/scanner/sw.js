// The scanner's service worker (built into /scanner/sw.js by vite.config.ts, which fills in the
// list of files and a version). It keeps the page and its assets, so the page opens and scans
// without a network; the API (/v1) is never cached here: the door data lives in IndexedDB.
const VERSION = __VERSION__;
const FILES = __FILES__;
const CACHE = `montage-scanner-${VERSION}`;
const PAGE = '/scanner/';

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(FILES))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((n) => n.startsWith('montage-scanner-') && n !== CACHE).map((n) => caches.delete(n))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const { request } = event;
  const url = new URL(request.url);
  if (request.method !== 'GET' || url.origin !== self.location.origin) return;
  if (url.pathname !== '/scanner' && !url.pathname.startsWith('/scanner/')) return;
  // The page: this version's copy (a new build installs a new worker with the new page).
  const key = request.mode === 'navigate' || url.pathname === '/scanner' ? PAGE : url.pathname;
  event.respondWith(caches.open(CACHE).then((cache) => cache.match(key).then((hit) => hit ?? fetch(request))));
});
