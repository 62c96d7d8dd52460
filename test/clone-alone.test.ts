import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

// `npm test` must pass from a clone alone (.ci/run runs it in a clone made in an empty folder). This
// catches the mistake early and names the file: no test, script, benchmark or source file may
// reach outside the repository for its inputs.
const root = path.resolve(import.meta.dirname, '..');
const walk = (dir: string): string[] =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name === 'node_modules' || e.name === 'fixtures') return [];
    const full = path.join(dir, e.name);
    return e.isDirectory() ? walk(full) : /\.(ts|mjs|js)$/.test(e.name) ? [full] : [];
  });

describe('a clone alone', () => {
  it('no file of test/, scripts/, bench/ or src/ names a folder beside the repository', () => {
    const offenders = ['test', 'scripts', 'bench', 'src']
      .flatMap((dir) => walk(path.join(root, dir)))
      .filter((file) => /\.\.\/(\.\.\/)?shared\b/.test(fs.readFileSync(file, 'utf8')))
      .map((file) => path.relative(root, file));
    assert.deepEqual(offenders, []);
  });

  it('the blend fixtures the tests use are in the repository, with their README and licences', () => {
    const fixtures = path.join(root, 'test/fixtures/blend');
    const index = JSON.parse(fs.readFileSync(path.join(fixtures, 'index.json'), 'utf8')) as { scenarios: Array<{ scenario: string }> };
    assert.ok(index.scenarios.length >= 6);
    for (const entry of index.scenarios) {
      const name = entry.scenario;
      const manifest = JSON.parse(fs.readFileSync(path.join(fixtures, name, 'manifest.json'), 'utf8')) as { images: string[]; groundTruth: string };
      for (const file of [...manifest.images, manifest.groundTruth]) assert.ok(fs.existsSync(path.join(fixtures, name, path.basename(file))), `${name}/${file}`);
    }
    assert.match(fs.readFileSync(path.join(fixtures, 'README.md'), 'utf8'), /Photos: sources and licenses/);
  });
});
