// `npm run release-pins`: rewrites src/local-cluster/release-pins.ts, the sha256 of every official
// release file of the components `cluster up` fetches, at the versions upstream/ pins, for amd64 and
// arm64, read from each project's published checksums on its official host over HTTPS (needs network
// access to dl.k8s.io, github.com and get.helm.sh). Run it after a version in upstream/ changes, and
// review the diff: every changed hash should belong to a changed version.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';

bootstrap();
const { renderPins } = await import('../dist/src/local-cluster/artifacts.js');
const { releaseComponents } = await import('../dist/src/local-cluster/build.js');
const sums = async (url) => {
  const res = await globalThis.fetch(url, {
    signal: globalThis.AbortSignal.timeout(30_000),
    redirect: 'follow',
  });
  if (!res.ok) throw new Error(`${url} answered HTTP ${res.status}`);
  return res.text();
};
try {
  const text = await renderPins(releaseComponents(), sums);
  const path = join(root, 'src', 'local-cluster', 'release-pins.ts');
  writeFileSync(path, text);
  process.stderr.write(`fakegpu: wrote ${path}\n`);
} catch (e) {
  process.stderr.write(
    `fakegpu: release-pins: ${e instanceof Error ? (e.cause?.message ?? e.message) : e}\n`,
  );
  process.exit(1);
}
