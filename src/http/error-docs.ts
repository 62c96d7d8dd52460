import type { FastifyPluginAsync } from 'fastify';
import { ERROR_CODES } from '../errors.js';

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
/** Escaped text, with `backticked` words set as code. */
const prose = (s: string) => escape(s).replace(/`([^`]+)`/g, '<code>$1</code>');

/** What a failure code means to the one who meets it. */
export interface FailureDoc {
  happened: string;
  next: string;
}

/**
 * The page every problem's `type` points into: `/docs/errors#<code>`, one section per code, then
 * the codes of a failed blend job (`blendFailures`, given by the blend area).
 */
export function errorDocsPage(blendFailures: Readonly<Record<string, FailureDoc>>): string {
  const codes = Object.entries(ERROR_CODES);
  const index = codes
    .map(([code, { status, title }]) => `<tr><td><a href="#${code}"><code>${code}</code></a></td><td>${status}</td><td>${escape(title)}</td></tr>`)
    .join('\n');
  const sections = codes
    .map(
      ([code, { status, title, happened, next }]) => `<section id="${code}">
<h2><code>${code}</code> <small>${status} ${escape(title)}</small></h2>
<p><strong>What happened.</strong> ${prose(happened)}</p>
<p><strong>What to do.</strong> ${prose(next)}</p>
</section>`,
    )
    .join('\n');
  const failures = Object.entries(blendFailures)
    .map(
      ([code, { happened, next }]) => `<section id="blend-${code}">
<h3><code>${code}</code></h3>
<p><strong>What happened.</strong> ${prose(happened)}</p>
<p><strong>What to do.</strong> ${prose(next)}</p>
</section>`,
    )
    .join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Montage error codes</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem}td,th{padding:.25rem .75rem;text-align:left}
h2,h3{font-size:1.15rem;margin:1.5rem 0 .25rem}h2 small{font-weight:normal;color:#555}section{padding:.1rem .75rem}section:target{background:#fff3b0}</style></head>
<body><h1>Error codes</h1><p>Every error is an RFC 9457 problem (<code>application/problem+json</code>) with a stable <code>code</code> to branch on,
a <code>detail</code> for people, and the <code>requestId</code> to quote in reports. Validation errors list the failing paths in <code>errors</code>.
The problem's <code>type</code> links to the code's section below: what happened, and what to do about it.</p>
<table><thead><tr><th>code</th><th>status</th><th>title</th></tr></thead><tbody>
${index}
</tbody></table>
${sections}
<h2 id="blend-failures">Why a blend job failed</h2>
<p>A blend job that fails is not an error answer: <code>GET /v1/blend/status/:jobId</code> answers 200 with
<code>status: "failed"</code> and <code>error: {code, message, imageIndex}</code>, and the <code>blend.failed</code> webhook carries the same.
These are its codes.</p>
${failures}
</body></html>`;
}

export const errorDocsRoutes: FastifyPluginAsync<{ blendFailures: Readonly<Record<string, FailureDoc>> }> = async (app, { blendFailures }) => {
  const page = errorDocsPage(blendFailures);
  app.get('/docs/errors', { schema: { hide: true } }, (_request, reply) => reply.type('text/html; charset=utf-8').send(page));
};
