// `npm run docs`: regenerates the tables of docs/fidelity.md from the catalog and presets.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';

bootstrap();
const { withTables } = await import('../dist/src/tools/fidelity/report.js');
const path = join(root, 'docs', 'fidelity.md');
writeFileSync(path, withTables(readFileSync(path, 'utf8')));
process.stderr.write(`fakegpu: wrote ${path}\n`);
