// Cancel: how soon a worker's CPU is back to idle after POST /v1/blend/jobs/:jobId/cancel of a job
// it is blending (docs/blend.md, "Cancel"; target: within 1 s). The API (`montage serve --no-worker`)
// and the worker (`montage worker`, 2 blend threads) are processes of their own on one SQLite
// DATA_DIR, so the cancel crosses processes as it does in a deployment. Each round starts a
// 5 × 3600×3600 exposure job, waits until it is aligning or blending, measures the worker's CPU
// rate over a second (user + system from /proc/<pid>/stat, every thread), cancels, and samples the
// worker's CPU every 50 ms: idle is the first 250 ms window whose rate is below a tenth of the
// working rate. Also: the time until the status reads `cancelled`.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import sharp from 'sharp';
import { build, checkedJson, createAccountAndKey, freePort, machine, makeTempDir, montageArgs, montageEnv, ROOT, startProcess, tables, waitForHttp } from './lib.mjs';

export const name = 'blend-cancel';
export const description = "Cancel of a running blend job: time until the worker's CPU is idle (another process)";

const ROUNDS = Number(process.env.BENCH_CANCEL_ROUNDS ?? 3);
const SIDE = 3600;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** CPU time (ms, user + system) of process `pid` so far. */
function cpuMs(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

async function frameServer() {
  const dir = path.join(ROOT, 'test/fixtures/blend/exposure-bracket');
  const frames = await Promise.all(['1.png', '2.png', '3.png'].map((f) => sharp(path.join(dir, f)).resize(SIDE, SIDE).jpeg({ quality: 90 }).toBuffer()));
  const server = http.createServer((req, res) => {
    const frame = frames[Number(req.url.slice(1)) % 3];
    res.writeHead(200, { 'content-type': 'image/jpeg' }).end(frame);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, urls: [0, 1, 2, 3, 4].map((i) => `http://127.0.0.1:${server.address().port}/${i}`) };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

export async function run() {
  await build();
  const m = machine();
  const { dir } = makeTempDir('montage-bench-cancel-');
  const port = await freePort();
  const env = montageEnv('sqlite', { montageDir: dir }, port, { MONTAGE_ALLOW_PRIVATE_NETWORK: '1', MONTAGE_BLEND_THREADS: '2', MONTAGE_BLEND_JOB_TIMEOUT: '600s' });
  const apiKey = await createAccountAndKey(env);
  const api = startProcess('montage serve', process.execPath, montageArgs('serve', '--no-worker'), { env });
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(api, `${base}/healthz`);
  const worker = startProcess('montage worker', process.execPath, montageArgs('worker'), { env });
  const images = await frameServer();
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const status = async (jobId) => checkedJson(await fetch(`${base}/v1/blend/status/${jobId}`, { headers }), 'status');
  const rows = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const job = await checkedJson(
        await fetch(`${base}/v1/blend/start`, { method: 'POST', headers, body: JSON.stringify({ projectId: 'bench', images: images.urls, options: { blendType: 'exposure' } }) }),
        'start',
        202,
      );
      for (;;) {
        const s = await status(job.jobId);
        if (['aligning', 'blending'].includes(s.progress?.stage)) break;
        if (!['queued', 'processing'].includes(s.status)) throw new Error(`the job ended before it could be cancelled: ${s.status}`);
        await sleep(50);
      }
      const pid = worker.child.pid;
      const before = cpuMs(pid);
      await sleep(1000);
      const working = cpuMs(pid) - before; // ms of CPU per second
      const samples = [{ at: performance.now(), cpu: cpuMs(pid) }];
      const askedAt = performance.now();
      await checkedJson(await fetch(`${base}/v1/blend/jobs/${job.jobId}/cancel`, { method: 'POST', headers }), 'cancel', 202);
      let cancelledAt = null;
      let idleAt = null;
      while (idleAt === null && performance.now() - askedAt < 30_000) {
        await sleep(50);
        samples.push({ at: performance.now(), cpu: cpuMs(pid) });
        if (cancelledAt === null && (await status(job.jobId)).status === 'cancelled') cancelledAt = performance.now();
        const last = samples.at(-1);
        const from = samples.findLast((s) => last.at - s.at >= 250);
        if (from && from.at >= askedAt && ((last.cpu - from.cpu) / (last.at - from.at)) * 1000 < working / 10) idleAt = from.at;
      }
      while (cancelledAt === null && performance.now() - askedAt < 30_000) {
        if ((await status(job.jobId)).status === 'cancelled') cancelledAt = performance.now();
        else await sleep(50);
      }
      rows.push({ round, working, idle: idleAt === null ? null : idleAt - askedAt, cancelled: cancelledAt === null ? null : cancelledAt - askedAt });
      console.log(`round ${round}: working ${(working / 1000).toFixed(2)} cores; idle ${rows.at(-1).idle?.toFixed(0)} ms, cancelled ${rows.at(-1).cancelled?.toFixed(0)} ms after the request`);
      await sleep(1000);
    }
  } finally {
    images.server.close();
  }
  const ok = rows.filter((r) => r.idle !== null && r.cancelled !== null);
  const idle = ok.length ? median(ok.map((r) => r.idle)) : null;
  const table = tables(
    ['round', 'worker CPU while blending (cores)', 'CPU idle after (ms)', 'status cancelled after (ms)'],
    rows.map((r) => [r.round, (r.working / 1000).toFixed(2), r.idle === null ? 'not idle in 30 s' : r.idle.toFixed(0), r.cancelled === null ? '—' : r.cancelled.toFixed(0)]),
    ['right', 'right', 'right', 'right'],
  );
  const pass = idle !== null && idle <= 1000;
  const summary = `median: CPU idle ${idle === null ? '—' : `${idle.toFixed(0)} ms`} after the cancel request; target <= 1000 ms: ${pass ? 'PASS' : 'FAIL'}`;
  const markdown = [
    `## Cancel: time until the worker's CPU is idle`,
    '',
    `${m.date}, commit ${m.commit}; ${m.cpu}, ${m.nproc} cores, ${m.memory}; Node ${m.node}.`,
    '',
    `A 5 × ${SIDE}×${SIDE} exposure job in a \`montage worker\` process (2 blend threads, SQLite), cancelled through the API process while aligning or blending; CPU from \`/proc/<pid>/stat\` every 50 ms, idle = first 250 ms window under a tenth of the working rate (\`npm run bench -- blend-cancel\`).`,
    '',
    table.md,
    '',
    summary,
  ].join('\n');
  return { text: `${table.text}\n\n${summary}`, markdown, pass, writeDoc: true };
}
