// `npm run bench:prepare`: sets itself up, then runs bench/prepare (results in the README).
import { bootstrap } from './bootstrap.mjs';

bootstrap();
await import('../dist/bench/prepare.js');
