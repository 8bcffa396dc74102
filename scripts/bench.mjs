// `npm run bench:prepare` / `npm run bench:mig`: sets itself up, then runs the named benchmark.
import { bootstrap } from './bootstrap.mjs';

const name = process.argv[2] ?? 'prepare';
bootstrap();
await import(`../dist/bench/${name}.js`);
