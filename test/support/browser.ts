import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { ensureDebianFile } from '../../src/local-cluster/build.js';

/**
 * A real headless browser for page tests: Debian's `chromium`, installed when missing (as root on
 * Debian; elsewhere the test fails naming the package). Each call is one run of the browser, which
 * loads the page, runs its script for `budgetMs` of virtual time (its fetches included) and then dumps
 * the DOM as the script left it, or takes a screenshot.
 */
const CHROMIUM = '/usr/bin/chromium';

function chromium(args: string[]): string {
  ensureDebianFile({ header: CHROMIUM, debian: 'chromium' }, (l) => process.stderr.write(`fakegpu: ${l}\n`));
  const r = spawnSync(
    CHROMIUM,
    ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', ...args],
    { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
  );
  if (r.status !== 0)
    throw new Error(`chromium ${args.join(' ')} exited ${String(r.status)}: ${r.stderr.slice(-2000)}`);
  return r.stdout;
}

/** The page's DOM after its script ran. */
export function dumpDom(url: string, budgetMs = 8000): string {
  return chromium([`--virtual-time-budget=${budgetMs}`, '--dump-dom', url]);
}

/** A PNG of the page after its script ran, at `path`. */
export function screenshot(url: string, path: string, budgetMs = 8000): void {
  mkdirSync(dirname(path), { recursive: true });
  chromium([`--virtual-time-budget=${budgetMs}`, '--window-size=1400,1000', `--screenshot=${path}`, url]);
}
