import { resolve } from 'node:path';
import { Command } from 'commander';
import { examples, movedOutputOption, OUTPUT_FILE } from './flags.js';

/** `fakegpu image build`: fakegpu's container image as an OCI archive, without Docker or a registry. */
export function imageCommand(write: (s: string) => void): Command {
  const image = new Command('image').description("fakegpu's own container image");
  examples(image, [`fakegpu image build ${OUTPUT_FILE} fakegpu.tar`]);
  const build = image
    .command('build')
    .description(
      "the Dockerfile's image assembled from this checkout (dist/, production node_modules) and this machine's Node.js, as an OCI archive for ctr images import",
    )
    .option(
      `${OUTPUT_FILE} <file>`,
      'where the archive goes (default: the cache, images/fakegpu-<version>.tar)',
    )
    .addOption(movedOutputOption('image build', OUTPUT_FILE))
    .action(async (opts: { outputFile?: string }) => {
      const { buildFakegpuImage } = await import('../local-cluster/fakegpu-image.js');
      const r = buildFakegpuImage(
        (l) => {
          process.stderr.write(`fakegpu: ${l}\n`);
        },
        opts.outputFile === undefined ? undefined : resolve(opts.outputFile),
      );
      write(`${r.ref} ${r.archive} ${(r.bytes / 2 ** 20).toFixed(1)} MiB\n`);
    });
  examples(build, ['fakegpu image build', `fakegpu image build ${OUTPUT_FILE} fakegpu.tar`]);
  return image;
}
