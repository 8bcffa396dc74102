// `npm run schemas`: regenerates the CRDs of deploy/crds/, their copies in the Helm chart, the chart's
// values.schema.json and docs/machine-profile.md (the MachineProfile field reference) from the zod
// schemas (src/tools/schemas).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';

bootstrap();
const { generatedFiles } = await import('../dist/src/tools/schemas/files.js');
for (const f of generatedFiles()) {
  const path = join(root, ...f.path.split('/'));
  writeFileSync(path, f.text);
  process.stderr.write(`fakegpu: wrote ${path}\n`);
}
