import { Command, Option } from 'commander';
import { parseRelease } from '../model/device/release.js';
import { parseKubernetesVersion } from '../kube/types/version.js';
import { layoutVersionOption, releaseChoiceOption } from './options.js';
import { serialize } from './output.js';

/** `fakegpu export karpenter`: every instance type's devices, for an autoscaler's simulation. */
export function exportCommand(write: (s: string) => void): Command {
  const exp = new Command('export').description('what other tools must know of the presets, in their shapes');
  exp
    .command('karpenter')
    .description(
      "every instance type with a preset and the ResourceSlices a node of it gets, as Karpenter's DynamicResources.ResourceSliceTemplates (pool name and GPU UUIDs are the node's)",
    )
    .option('--dynamic-mig', 'as nodes with every MIG partition published')
    .addOption(layoutVersionOption())
    .addOption(releaseChoiceOption())
    .addOption(new Option('-o, --output <format>', 'output format').choices(['yaml', 'json']).default('yaml'))
    .action(
      async (opts: {
        dynamicMig?: boolean;
        kubernetesVersion: string;
        draDriverRelease: string;
        output: 'yaml' | 'json';
      }) => {
        const { karpenterTemplates } = await import('../tools/karpenter/templates.js');
        write(
          serialize(
            {
              apiVersion: 'fakegpu.dev/v1alpha1',
              kind: 'KarpenterInstanceTypes',
              instanceTypes: karpenterTemplates({
                dynamicMig: opts.dynamicMig === true,
                kubernetesVersion: parseKubernetesVersion(opts.kubernetesVersion, '--kubernetes-version'),
                release: parseRelease(opts.draDriverRelease, '--dra-driver-release'),
              }),
            },
            opts.output,
          ),
        );
      },
    );
  exp
    .command('karpenter-kwok')
    .description(
      "every instance type with a preset as Karpenter's KWOK provider reads them (INSTANCE_TYPES_FILE_PATH): the cloud's CPUs, memory, pods, price and nvidia.com/gpu",
    )
    .action(async () => {
      const { kwokInstanceTypes } = await import('../tools/karpenter/instance-types.js');
      write(`${JSON.stringify(kwokInstanceTypes(), null, 2)}\n`);
    });
  return exp;
}
