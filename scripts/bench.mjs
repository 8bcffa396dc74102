// `npm run bench:prepare` / `bench:mig` / `bench:fleet` / …: sets itself up, then runs the named
// benchmark. A benchmark that fails says why in one line and exits 1; the stack is for FAKEGPU_DEBUG=1.
import { bootstrap } from './bootstrap.mjs';

const name = process.argv[2] ?? 'prepare';
// Flags after the name (e.g. --publish) reach the benchmark through process.argv.
bootstrap();
try {
  await import(`../dist/bench/${name}.js`);
} catch (e) {
  const message = e instanceof Error ? e.message : String(e);
  process.stderr.write(`bench/${name}: ${message.split('\n', 1)[0]}\n`);
  if (process.env.FAKEGPU_DEBUG === '1' && e instanceof Error) process.stderr.write(`${e.stack ?? ''}\n`);
  process.exit(1);
}
