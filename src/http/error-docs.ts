import type { FastifyPluginAsync } from 'fastify';
import { ERROR_CODES } from '../errors.js';

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page every problem's `type` points into: `/docs/errors#<code>`. */
export const errorDocsRoutes: FastifyPluginAsync = async (app) => {
  const rows = Object.entries(ERROR_CODES)
    .map(([code, { status, title }]) => `<tr id="${code}"><td><code>${code}</code></td><td>${status}</td><td>${escape(title)}</td></tr>`)
    .join('\n');
  const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Montage error codes</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem}td,th{padding:.25rem .75rem;text-align:left}tr:target{background:#fff3b0}</style></head>
<body><h1>Error codes</h1><p>Every error is an RFC 9457 problem (<code>application/problem+json</code>) with a stable <code>code</code>,
a <code>detail</code> for people and the <code>requestId</code> to quote in reports. Validation errors list the failing paths in <code>errors</code>.</p>
<table><thead><tr><th>code</th><th>status</th><th>title</th></tr></thead><tbody>
${rows}
</tbody></table></body></html>`;
  app.get('/docs/errors', { schema: { hide: true } }, (_request, reply) => reply.type('text/html; charset=utf-8').send(page));
};
