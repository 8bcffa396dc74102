// `npm run docs`: regenerates the tables of docs/fidelity.md from the catalog and presets, and the SVG
// charts of bench/charts/ from the committed results in bench/results/.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';

bootstrap();
const { withTables } = await import('../dist/src/tools/fidelity/report.js');
const path = join(root, 'docs', 'fidelity.md');
writeFileSync(path, withTables(readFileSync(path, 'utf8')));
process.stderr.write(`fakegpu: wrote ${path}\n`);

const { committedResults, generatedCharts } = await import('../dist/src/tools/charts/files.js');
try {
  for (const c of await generatedCharts(committedResults(root))) {
    writeFileSync(join(root, ...c.path.split('/')), c.text);
    process.stderr.write(`fakegpu: wrote ${c.path}\n`);
  }
} catch (e) {
  process.stderr.write(`fakegpu: npm run docs: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}
