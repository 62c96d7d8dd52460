import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import sharp from 'sharp';
import { ENGINES, freePort, freshStorage, serveProcess } from './helpers.js';

const ROOT = path.resolve(import.meta.dirname, '..');

/** The ```sh blocks of one README section, in order, as written. */
function shellBlocks(heading: string): string[] {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `README has no section "${heading}"`);
  const end = readme.indexOf('\n## ', start + heading.length + 2);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

function bash(script: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-e', '-c', script], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

for (const engine of ENGINES) {
  describe(`README quick start (${engine})`, () => {
    test('the commands of "A first request", run as written, end with a completed blend job and a result image', async (t) => {
      const blocks = shellBlocks('## A first request');
      assert.ok(blocks.length >= 2, 'a key block and a blend block');
      assert.ok(blocks.some((b) => b.includes('/v1/blend/start')));
      const storage = await freshStorage(t, engine);
      const port = await freePort();
      // Only the port (and where the data lives) differ from the README's machine.
      const env = { ...storage.env, PORT: String(port), MONTAGE_LOG_LEVEL: 'warn' };
      await serveProcess(t, env);
      const script = blocks.join('\n').replaceAll('http://127.0.0.1:8080', `http://127.0.0.1:${port}`);
      const run = await bash(script, env);
      assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
      // The last command prints the job's status (curl adds no newline after a body).
      const job = JSON.parse(run.stdout.slice(run.stdout.lastIndexOf('{"jobId"')));
      assert.equal(job.status, 'completed', JSON.stringify(job));
      assert.equal(job.blendType, 'median');
      const result = await fetch(job.resultUrl);
      assert.equal(result.status, 200);
      const image = Buffer.from(await result.arrayBuffer());
      const { info } = await sharp(image).raw().toBuffer({ resolveWithObject: true });
      assert.deepEqual([info.width, info.height], [job.width, job.height]);
      assert.ok(info.width > 0 && info.height > 0);
    });
  });
}
