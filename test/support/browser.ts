import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { ensureDebianFile } from '../../src/local-cluster/build.js';

/**
 * A real headless browser for page tests: Debian's `chromium`, installed when missing (as root on
 * Debian; elsewhere the test fails naming the package). Each call is one run of the browser, which
 * loads the page, runs its script for `budgetMs` of virtual time (its fetches included) and then dumps
 * the DOM as the script left it, or takes a screenshot. The run does not block this process, which may
 * be serving the page itself.
 */
const CHROMIUM = '/usr/bin/chromium';

function chromium(args: string[]): Promise<string> {
  ensureDebianFile({ header: CHROMIUM, debian: 'chromium' }, (l) => process.stderr.write(`fakegpu: ${l}\n`));
  return new Promise((resolve, reject) => {
    execFile(
      CHROMIUM,
      ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', ...args],
      { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`chromium ${args.join(' ')}: ${err.message}: ${stderr.slice(-2000)}`));
        else resolve(stdout);
      },
    );
  });
}

/** The page's DOM after its script ran. */
export function dumpDom(url: string, budgetMs = 8000): Promise<string> {
  return chromium([`--virtual-time-budget=${budgetMs}`, '--dump-dom', url]);
}

/** A PNG of the page after its script ran, at `path`. */
export async function screenshot(url: string, path: string, budgetMs = 8000): Promise<void> {
  mkdirSync(dirname(path), { recursive: true });
  await chromium([
    `--virtual-time-budget=${budgetMs}`,
    '--window-size=1400,1000',
    `--screenshot=${path}`,
    url,
  ]);
}
