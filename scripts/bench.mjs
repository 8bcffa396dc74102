// `npm run bench:prepare` / `bench:mig` / `bench:fleet`: sets itself up, then runs the named benchmark.
import { bootstrap } from './bootstrap.mjs';

const name = process.argv[2] ?? 'prepare';
// Flags after the name (e.g. --publish) reach the benchmark through process.argv.
bootstrap();
await import(`../dist/bench/${name}.js`);
