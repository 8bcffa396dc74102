// Brings a fresh checkout to a runnable state with nothing but Node and npm: installs the locked
// dependencies when they are missing or stale, then compiles. Uses only Node built-ins, because it runs
// before node_modules exists.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function run(cmd, args, what) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.error) throw new Error(`${what}: cannot start ${cmd}: ${r.error.message}`);
  if (r.status !== 0) {
    process.stderr.write(`fakegpu: ${what} failed (exit ${r.status}); see the output above\n`);
    process.exit(r.status ?? 1);
  }
}

export function ensureNode() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major < 20 || (major === 20 && minor < 19)) {
    process.stderr.write(`fakegpu: Node.js >= 20.19 is required, this is ${process.versions.node}\n`);
    process.exit(1);
  }
}

const marker = join(root, 'node_modules', '.fakegpu-lock-sha256');
const lockHash = () =>
  createHash('sha256')
    .update(readFileSync(join(root, 'package-lock.json')))
    .digest('hex');

/** Records that node_modules matches package-lock.json, so later runs skip `npm ci`. */
export function markDependencies() {
  writeFileSync(marker, `${lockHash()}\n`);
}

/** `npm ci` when node_modules does not match package-lock.json (checked by hash, so edits are seen). */
export function ensureDependencies() {
  const have = existsSync(marker) ? readFileSync(marker, 'utf8').trim() : '';
  if (have === lockHash()) return;
  process.stderr.write('fakegpu: installing dependencies (npm ci)...\n');
  run('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], 'npm ci');
  markDependencies();
}

export function build() {
  run(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'],
    'TypeScript build',
  );
}

export function bootstrap() {
  ensureNode();
  ensureDependencies();
  build();
}
