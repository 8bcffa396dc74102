/**
 * bench/startup: how long the CLI takes to start, against bare Node started the same way in the same
 * run (`node -e 0`, the baseline), and how YAML output compares with JSON on a large render.
 *
 * Each round runs every command line once, in turn, from spawn to exit, with standard output to
 * /dev/null; medians over the rounds are compared, so that a busy machine slows all of them alike. Peak
 * memory is measured in one run of each apart from the timed ones (the hook that reports it costs time).
 *
 * Usage: npm run bench:startup -- [--rounds 15] [--big-rounds 5] [--json <file>]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { intFlag } from '../src/cli/options.js';
import { REPO_ROOT } from '../src/process/repo.js';
import { checked as checkedFlag, hardware, logger, median, resultPath, writeResult } from './support.js';

const opts = new Command('bench:startup')
  .option('--rounds <n>', 'runs of each start-up command line, in turn', '15')
  .option('--big-rounds <n>', 'runs of the 255-GPU render, YAML and JSON in turn', '5')
  .option('--json <file>', 'where the result goes (default: the cache, bench-results/)')
  .parse(process.argv.slice(3), { from: 'user' })
  .opts<{ rounds: string; bigRounds: string; json?: string }>();

const log = logger('bench/startup');
const checked = <T>(parse: () => T): T => checkedFlag('bench/startup', parse);
const ROUNDS = checked(() => intFlag(opts.rounds, '--rounds', 1, 1000));
const BIG_ROUNDS = checked(() => intFlag(opts.bigRounds, '--big-rounds', 1, 100));
const BIN = join(REPO_ROOT, 'bin', 'fakegpu.js');

/** 255 GPUs (the most a node has: /dev/nvidia255 is the control device) with every MIG partition. */
function bigProfile(dir: string): string {
  const gpus = [64, 64, 64, 63].map((count) => `    - model: H100-SXM5-80GB\n      count: ${count}\n`);
  const file = join(dir, 'big.yaml');
  writeFileSync(
    file,
    `apiVersion: fakegpu.dev/v1alpha1\nkind: MachineProfile\nmetadata:\n  name: bench-255\nspec:\n  gpus:\n${gpus.join('')}`,
  );
  return file;
}

interface Line {
  name: string;
  args: string[];
}

interface Row {
  name: string;
  medianMs: number;
  minMs: number;
  maxMs: number;
  /** The median against the first line's, measured in the same rounds. */
  ratio: number;
  peakMiB: number;
}

/** Milliseconds from spawn to exit; a command that fails stops the bench with its message. */
function timed(args: readonly string[]): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`node ${args.join(' ')}: exit ${r.status}: ${r.stderr.trim()}`);
  return ms;
}

/** Peak resident memory of one run, in MiB, reported by the process itself as it exits. */
function peakMiB(args: readonly string[], dir: string): number {
  const out = join(dir, 'rss');
  const hook = `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, String(process.resourceUsage().maxRSS)));`;
  timed(['--require', writeHook(dir, hook), ...args]);
  return Number(readFileSync(out, 'utf8')) / 1024;
}

function writeHook(dir: string, code: string): string {
  const file = join(dir, 'rss-hook.cjs');
  writeFileSync(file, code);
  return file;
}

/** Every line run once per round, in turn; their medians and each one's ratio to the first. */
function race(lines: Line[], rounds: number, dir: string): Row[] {
  const ms = new Map<string, number[]>(lines.map((l) => [l.name, []]));
  for (let i = 0; i < rounds; i++) for (const l of lines) ms.get(l.name)?.push(timed(l.args));
  const base = median(ms.get(lines[0]?.name ?? '') ?? []);
  return lines.map((l) => {
    const times = ms.get(l.name) ?? [];
    const m = median(times);
    return {
      name: l.name,
      medianMs: Math.round(m),
      minMs: Math.round(Math.min(...times)),
      maxMs: Math.round(Math.max(...times)),
      ratio: Number((m / base).toFixed(2)),
      peakMiB: Number(peakMiB(l.args, dir).toFixed(1)),
    };
  });
}

function show(title: string, rows: Row[], first: string): void {
  process.stdout.write(`\n${title}\n`);
  process.stdout.write(`| command line | median ms | range ms | vs ${first} | peak MiB |\n`);
  process.stdout.write('| --- | --- | --- | --- | --- |\n');
  for (const r of rows)
    process.stdout.write(
      `| ${r.name} | ${r.medianMs} | ${r.minMs} – ${r.maxMs} | ${r.ratio.toFixed(2)}x | ${r.peakMiB.toFixed(1)} |\n`,
    );
}

const started = new Date();
const dir = mkdtempSync(join(tmpdir(), 'fakegpu-bench-startup-'));
try {
  log(`${ROUNDS} rounds of start-up, ${BIG_ROUNDS} of the 255-GPU render; ${hardware()}`);
  const startup = race(
    [
      { name: 'node -e 0', args: ['-e', '0'] },
      { name: 'fakegpu --version', args: [BIN, '--version'] },
      { name: 'fakegpu render -p dgx-h100 -n n1', args: [BIN, 'render', '-p', 'dgx-h100', '-n', 'n1'] },
      { name: 'fakegpu validate dgx-h100', args: [BIN, 'validate', 'dgx-h100'] },
    ],
    ROUNDS,
    dir,
  );
  const big = bigProfile(dir);
  const render = [BIN, 'render', '-p', big, '-n', 'n1', '--dynamic-mig'];
  const output = race(
    [
      { name: 'render 255 GPUs --dynamic-mig -o json', args: [...render, '-o', 'json'] },
      { name: 'render 255 GPUs --dynamic-mig -o yaml', args: [...render, '-o', 'yaml'] },
    ],
    BIG_ROUNDS,
    dir,
  );
  show(`Start-up, median of ${ROUNDS} rounds (${hardware()})`, startup, 'node -e 0');
  show(`YAML against JSON, median of ${BIG_ROUNDS} rounds`, output, 'JSON');
  const path = resultPath('startup', started, opts.json);
  writeResult(path, {
    bench: 'startup',
    started,
    hardware: hardware(),
    node: process.version,
    startup,
    output,
  });
  log(`result: ${path}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
