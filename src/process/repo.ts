import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout this code runs from: `bin/fakegpu.js` for our own processes, `deploy/` for manifests. */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
