// Brings a fresh checkout to a runnable state with nothing but Node and npm: installs the locked
// dependencies when they are missing or stale, then compiles. Uses only Node built-ins, because it runs
// before node_modules exists.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function run(cmd, args, what, cwd = root) {
  // Their output goes to standard error: standard output is the command's (`npm run -s fakegpu … > x.json`).
  const r = spawnSync(cmd, args, { cwd, stdio: ['ignore', 2, 'inherit'] });
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

/** What the build reads (tsconfig.json's `include`), and what it compiles against. */
const BUILD_INPUTS = ['src', 'test', 'bench'];
const stampOf = (dir) => join(dir, 'dist', '.fakegpu-build-inputs');

function tsFiles(dir, out) {
  if (!existsSync(dir)) return out;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) tsFiles(p, out);
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/**
 * Every input's path, size and modification time, and the lock file and tsconfig.json whole: an edit,
 * a new or deleted file, a checkout or new dependencies change it. Stat calls only, so that checking
 * costs milliseconds where compiling costs seconds.
 */
function buildInputs(dir) {
  const h = createHash('sha256');
  h.update(readFileSync(join(dir, 'package-lock.json')));
  h.update(readFileSync(join(dir, 'tsconfig.json')));
  for (const f of BUILD_INPUTS.flatMap((d) => tsFiles(join(dir, d), [])).sort()) {
    const s = statSync(f);
    h.update(`${f}\0${s.size}\0${s.mtimeMs}\n`);
  }
  return h.digest('hex');
}

/** Compiles, and records what it compiled so that `ensureBuilt` can skip the next one. */
export function build(dir = root) {
  const inputs = buildInputs(dir);
  run(
    process.execPath,
    [join(dir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'],
    'TypeScript build',
    dir,
  );
  mkdirSync(join(dir, 'dist'), { recursive: true });
  pruneStale(dir);
  writeFileSync(stampOf(dir), `${inputs}\n`);
}

/**
 * tsc writes what it compiles and never removes what it compiled before: a test deleted from test/
 * would still run from dist/. Each output whose source is gone goes (dist/x.js and its .map and .d.ts
 * from x.ts; `rootDir` is the checkout).
 */
function pruneStale(dir) {
  const dist = join(dir, 'dist');
  const walk = (rel) => {
    for (const e of readdirSync(join(dist, rel), { withFileTypes: true })) {
      const path = rel ? join(rel, e.name) : e.name;
      if (e.isDirectory()) walk(path);
      else {
        const m = /^(.*)\.js(?:\.map)?$|^(.*)\.d\.ts(?:\.map)?$/.exec(path);
        const source = m ? `${m[1] ?? m[2]}.ts` : null;
        if (source && !existsSync(join(dir, source))) rmSync(join(dist, path));
      }
    }
  };
  walk('');
}

/** Compiles unless dist/ was built from exactly these inputs (a checkout that did not change). */
export function ensureBuilt(dir = root) {
  const stamp = stampOf(dir);
  const built = existsSync(stamp) ? readFileSync(stamp, 'utf8').trim() : '';
  if (built !== buildInputs(dir)) build(dir);
}

export function bootstrap() {
  ensureNode();
  ensureDependencies();
  build();
}
