// `npm test`: set-up, lint and format check, then every unit and golden test on node's own runner.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';

bootstrap();

function step(what, cmd, args) {
  process.stderr.write(`fakegpu: ${what}\n`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    process.stderr.write(`fakegpu: ${what} failed\n`);
    process.exit(r.status ?? 1);
  }
}

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return testFiles(p);
    return e.name.endsWith('.test.js') ? [relative(root, p)] : [];
  });
}

const bin = (pkg, file) => join(root, 'node_modules', pkg, file);
if (process.env.FAKEGPU_SKIP_LINT !== '1') {
  step('lint (eslint)', process.execPath, [bin('eslint', 'bin/eslint.js'), '.']);
  step('format check (prettier)', process.execPath, [bin('prettier', 'bin/prettier.cjs'), '--check', '.']);
}
const files = testFiles(join(root, 'dist', 'test'));
if (files.length === 0) {
  process.stderr.write('fakegpu: no compiled tests found under dist/test\n');
  process.exit(1);
}
step(`unit tests (${files.length} files)`, process.execPath, ['--test', '--test-reporter=spec', ...files]);
