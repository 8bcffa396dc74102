import { Command, Option } from 'commander';
import { GPU_OFFERS, type GpuOffer } from '../tools/karpenter/gpu-offer.js';
import { parseRelease } from '../model/device/release.js';
import { parseConsumableShares } from '../model/device/consumable-shares.js';
import {
  consumableSharesOption,
  featureGatesOption,
  layoutVersionOption,
  releaseChoiceOption,
  resolveGates,
} from './options.js';
import { serialize } from './output.js';
import { examples, kubernetesVersionFlag, outputOption } from './flags.js';

/** `fakegpu export karpenter`: every instance type's devices, for an autoscaler's simulation. */
export function exportCommand(write: (s: string) => void): Command {
  const exp = new Command('export').description('what other tools must know of the presets, in their shapes');
  examples(exp, ['fakegpu export karpenter -o json', 'fakegpu export karpenter-kwok > instance-types.json']);
  const karpenter = exp
    .command('karpenter')
    .description(
      "every instance type with a preset and the ResourceSlices a node of it gets, as Karpenter's DynamicResources.ResourceSliceTemplates (pool name and GPU UUIDs are the node's)",
    )
    .option('--dynamic-mig', 'as nodes with every MIG partition published')
    .addOption(layoutVersionOption())
    .addOption(releaseChoiceOption())
    .option('--no-nics', "leave out the NICs' slice templates (DRANET's)")
    .addOption(featureGatesOption())
    .addOption(consumableSharesOption())
    .addOption(outputOption(['yaml', 'json'], 'export karpenter', { default: 'yaml' }).default('yaml'))
    .action(
      async (opts: {
        dynamicMig?: boolean;
        nics: boolean;
        kubernetesVersion: string;
        draDriverRelease: string;
        featureGates: string;
        consumableShares: string;
        output: 'yaml' | 'json';
      }) => {
        const { karpenterTemplates } = await import('../tools/karpenter/templates.js');
        const release = parseRelease(opts.draDriverRelease, '--dra-driver-release');
        const gates = resolveGates(opts.featureGates, release, opts.dynamicMig === true, '--feature-gates');
        const instanceTypes = karpenterTemplates({
          dynamicMig: opts.dynamicMig === true,
          kubernetesVersion: kubernetesVersionFlag(opts.kubernetesVersion),
          release,
          nics: opts.nics,
          gates,
          consumableShares: parseConsumableShares(opts.consumableShares, gates),
        });
        write(
          serialize(
            { apiVersion: 'fakegpu.dev/v1alpha1', kind: 'KarpenterInstanceTypes', instanceTypes },
            opts.output,
          ),
        );
      },
    );
  examples(karpenter, [
    'fakegpu export karpenter > instance-types.yaml',
    'fakegpu export karpenter --dynamic-mig --no-nics -o json',
    'fakegpu export karpenter --feature-gates ConsumableShares=true --consumable-shares memory',
  ]);
  const kwok = exp
    .command('karpenter-kwok')
    .description(
      "every instance type with a preset as Karpenter's KWOK provider reads them (INSTANCE_TYPES_FILE_PATH): the cloud's CPUs, memory, pods and price, and with --gpus extended-resource nvidia.com/gpu",
    )
    .addOption(
      new Option(
        '--gpus <offer>',
        "'dra': no nvidia.com/gpu, the GPUs are the DRA devices of `export karpenter`'s templates; 'extended-resource': nvidia.com/gpu, for a Karpenter that ignores DRA requests and nodes the fleet does not serve (a GPU offered both ways is allocated twice)",
      )
        .choices(GPU_OFFERS)
        .default('dra'),
    )
    .action(async (opts: { gpus: GpuOffer }) => {
      const { kwokInstanceTypes } = await import('../tools/karpenter/instance-types.js');
      write(`${JSON.stringify(kwokInstanceTypes(opts.gpus), null, 2)}\n`);
    });
  examples(kwok, [
    'fakegpu export karpenter-kwok > instance-types.json',
    'fakegpu export karpenter-kwok --gpus extended-resource',
  ]);
  return exp;
}
