import { resolve } from 'node:path';
import { Command } from 'commander';

/** `fakegpu image build`: fakegpu's container image as an OCI archive, without Docker or a registry. */
export function imageCommand(write: (s: string) => void): Command {
  const image = new Command('image').description("fakegpu's own container image");
  image
    .command('build')
    .description(
      "the Dockerfile's image assembled from this checkout (dist/, production node_modules) and this machine's Node.js, as an OCI archive for ctr images import",
    )
    .option(
      '-o, --output <file>',
      'where the archive goes (default: the cache, images/fakegpu-<version>.tar)',
    )
    .action(async (opts: { output?: string }) => {
      const { buildFakegpuImage } = await import('../local-cluster/fakegpu-image.js');
      const r = buildFakegpuImage(
        (l) => {
          process.stderr.write(`fakegpu: ${l}\n`);
        },
        opts.output === undefined ? undefined : resolve(opts.output),
      );
      write(`${r.ref} ${r.archive} ${(r.bytes / 2 ** 20).toFixed(1)} MiB\n`);
    });
  return image;
}
