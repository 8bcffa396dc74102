import { Command, Option } from 'commander';
import { modelLookup } from '../model/hardware/models.js';
import { parseRelease } from '../model/device/release.js';
import { parseConsumableShares } from '../model/device/consumable-shares.js';
import { FakegpuError, show } from '../errors.js';
import { buildMachine } from '../model/hardware/build.js';
import { presetForInstanceType, PRESETS } from '../model/preset/index.js';
import { capturesOf } from '../model/preset/captures.js';
import { profileSource } from '../model/profile/load.js';
import { resolveProfile } from '../process/profile-file.js';
import type { ProfileSpec } from '../model/preset/machine-spec.js';
import { checkNodeName, renderSlices, validateProfile } from '../model/render.js';
import { renderTopology, topology } from '../model/topology/topology.js';
import { DRIVER_NAME } from '../model/slice/build.js';
import { DRANET, nicDeviceName } from '../model/nic/attributes.js';
import {
  featureGatesOption,
  consumableSharesOption,
  layoutVersionOption,
  noComputeDomainsOption,
  releaseChoiceOption,
  resolveGates,
} from './options.js';
import { serialize, table, type Format } from './output.js';
import { examplesText, kubernetesVersionFlag, nodeNameOption, outputOption } from './flags.js';
import { isDriverName } from '../kube/types/names.js';

export { DEFAULT_KUBERNETES_VERSION } from './options.js';

/** `8x A100-SXM4-40GB` (groups consecutive GPUs of one model). */
function gpuSummary(spec: ProfileSpec): { model: string; count: number }[] {
  const out: { model: string; count: number }[] = [];
  const lookup = modelLookup(spec);
  for (const g of spec.gpus ?? []) {
    const model = lookup(g.model, 'model').key;
    const last = out[out.length - 1];
    if (last?.model === model) last.count += g.count ?? 1;
    else out.push({ model, count: g.count ?? 1 });
  }
  return out;
}

/** `8x A100-SXM4-40GB, 2x L4`. */
export function gpuSummaryText(spec: ProfileSpec): string {
  return gpuSummary(spec)
    .map((g) => `${g.count}x ${g.model}`)
    .join(', ');
}

export function profilesCommand(write: (s: string) => void): Command {
  return new Command('profiles')
    .description('list the built-in machine presets')
    .addOption(outputOption(['json', 'yaml', 'wide', 'name'], 'profiles'))
    .addHelpText(
      'after',
      examplesText(['fakegpu profiles', 'fakegpu profiles -o name', 'fakegpu profiles -o wide']),
    )
    .action((opts: { output?: 'json' | 'yaml' | 'wide' | 'name' }) => {
      const rows = PRESETS.map((p) => {
        const aspects = Object.entries(p.provenance);
        const confirmed = aspects.filter(([, s]) => s.confirmed).map(([k]) => k);
        return {
          name: p.name,
          description: p.description,
          instanceType: p.instanceType ?? null,
          gpus: gpuSummary(p.spec),
          nics: p.spec.nics?.length ?? 0,
          driverVersion: p.spec.driver?.version ?? null,
          provenance: Object.fromEntries(
            aspects.map(([k, s]) => [k, s.confirmed ? 'confirmed' : 'inferred']),
          ),
          confirmed: `${confirmed.length}/${aspects.length}`,
          captures: capturesOf(p.name).map((c) => `${c.kind} ${c.file}`),
        };
      });
      if (opts.output === 'json' || opts.output === 'yaml') {
        write(serialize(rows, opts.output));
        return;
      }
      if (opts.output === 'name') {
        write(rows.map((r) => `${r.name}\n`).join(''));
        return;
      }
      const wide = opts.output === 'wide' ? ['DESCRIPTION'] : [];
      write(
        table(
          ['NAME', 'INSTANCE TYPE', 'GPUS', 'NICS', 'DRIVER', 'CONFIRMED', 'REAL CAPTURE', ...wide],
          rows.map((r) => [
            r.name,
            r.instanceType ?? '-',
            r.gpus.map((g) => `${g.count}x ${g.model}`).join(', '),
            String(r.nics),
            r.driverVersion ?? '',
            `${r.confirmed} (${Object.entries(r.provenance)
              .filter(([, v]) => v === 'confirmed')
              .map(([k]) => k)
              .join(',')})`,
            r.captures.length === 0 ? 'none' : r.captures.map((c) => c.split(' ')[0]).join('+'),
            ...(wide.length > 0 ? [r.description] : []),
          ]),
        ),
      );
    });
}

interface RenderFlags {
  profile?: string;
  instanceType?: string;
  nodeName: string;
  dynamicMig?: boolean;
  driverVersion?: string;
  driverName: string;
  kubernetesVersion: string;
  draDriverRelease: string;
  featureGates: string;
  consumableShares: string;
  nics: boolean;
  nicDriverName: string;
  nicNumaAttribute: string;
  computeDomains: boolean;
  output: Format;
}

export function renderCommand(write: (s: string) => void): Command {
  return new Command('render')
    .description(
      "print the ResourceSlices the node plugin and the fleet would publish for a node, as a v1 List: the GPUs', the NICs' (DRANET's) and, on GB200 and GB300, NVIDIA's compute-domain slice",
    )
    .option(
      '-p, --profile <preset|file.yaml>',
      'a preset name (see `fakegpu profiles`) or a MachineProfile file',
    )
    .option(
      '--instance-type <type>',
      "instead of --profile: a cloud instance type, as node.kubernetes.io/instance-type has it (the fleet's mapping)",
    )
    .addOption(
      nodeNameOption('node name: pool name, nodeName and the seed of the GPU UUIDs', { required: true }),
    )
    .option(
      '--dynamic-mig',
      "publish every possible MIG partition with shared counters (the driver's DynamicMIG gate)",
    )
    .option('--driver-version <version>', 'NVIDIA driver version, overriding the profile (e.g. 580.95.05)')
    .option('--driver-name <name>', 'DRA driver name', DRIVER_NAME)
    .addOption(layoutVersionOption())
    .addOption(releaseChoiceOption())
    .addOption(featureGatesOption())
    .addOption(consumableSharesOption())
    .option('--no-nics', "leave out the NIC slices (DRANET's) that a profile with NICs gets")
    .option('--nic-driver-name <name>', 'driver name of the NIC slices', DRANET)
    .addOption(nicNumaOption())
    .addOption(noComputeDomainsOption('show the compute-domain.nvidia.com slice'))
    .addOption(outputOption(['yaml', 'json'], 'render', { default: 'yaml' }).default('yaml'))
    .addHelpText(
      'after',
      examplesText([
        'fakegpu render -p dgx-h100 -n node-1',
        'fakegpu render -p dgx-h100 -n node-1 --dynamic-mig -o json',
        'fakegpu render --instance-type p5.48xlarge -n node-1 --no-nics --kubernetes-version 1.34',
      ]),
    )
    .action((opts: RenderFlags) => {
      if ((opts.profile === undefined) === (opts.instanceType === undefined))
        throw new FakegpuError(
          opts.profile === undefined ? '--profile' : '--instance-type',
          'give one of --profile and --instance-type',
        );
      const profile =
        opts.instanceType === undefined
          ? (opts.profile ?? '')
          : presetForInstanceType(opts.instanceType, '--instance-type').name;
      const release = parseRelease(opts.draDriverRelease, '--dra-driver-release');
      const gates = resolveGates(opts.featureGates, release, opts.dynamicMig === true, '--feature-gates');
      const list = renderSlices(resolveProfile(profile), {
        nics: opts.nics
          ? {
              driverName: checkDriverName(opts.nicDriverName, '--nic-driver-name'),
              standardNumaNode: opts.nicNumaAttribute === 'standard',
            }
          : undefined,
        computeDomains: opts.computeDomains,
        nodeName: opts.nodeName,
        dynamicMig: gates.DynamicMIG,
        driverVersion: opts.driverVersion,
        driverName: checkDriverName(opts.driverName, '--driver-name'),
        kubernetesVersion: kubernetesVersionFlag(opts.kubernetesVersion),
        release,
        gates,
        consumableShares: parseConsumableShares(opts.consumableShares, gates),
      });
      write(serialize(list, opts.output));
    });
}

/**
 * Which NUMA key NICs carry: DRANET's own `dra.net/numaNode` only, or also the standard one GPUs publish
 * from NVIDIA's 0.5 release, which lets `matchAttribute` align the two.
 */
export function nicNumaOption(): Option {
  return new Option(
    '--nic-numa-attribute <which>',
    '"dranet": dra.net/numaNode only, as DRANET publishes; "standard": also resource.kubernetes.io/numaNode',
  )
    .choices(['dranet', 'standard'])
    .default('dranet');
}

export function checkDriverName(name: string, flag: string): string {
  if (!isDriverName(name)) {
    throw new FakegpuError(
      flag,
      `${show(name)} is not a valid DRA driver name; expected a lower-case DNS subdomain of at most 63 characters with a domain, e.g. "gpu.nvidia.com"`,
    );
  }
  return name;
}

interface ValidateFlags {
  dynamicMig?: boolean;
  nics: boolean;
  draDriverRelease: string;
  featureGates: string;
}

export function validateCommand(write: (s: string) => void): Command {
  return new Command('validate')
    .description('check a MachineProfile file and summarise the machine it describes')
    .argument('<file>', 'MachineProfile YAML or JSON file, "-" for standard input, or a preset name')
    .option('--dynamic-mig', 'validate for a node running with dynamic MIG')
    .option('--no-nics', "validate for a node that publishes no NIC slices (DRANET's)")
    .addOption(releaseChoiceOption())
    .addOption(featureGatesOption())
    .addHelpText(
      'after',
      examplesText([
        'fakegpu validate my-node.yaml',
        'fakegpu validate dgx-h100 --dynamic-mig',
        "kubectl get cm p -o jsonpath='{.data.p}' | fakegpu validate -",
      ]),
    )
    .action((file: string, opts: ValidateFlags) => {
      const release = parseRelease(opts.draDriverRelease, '--dra-driver-release');
      const gates = resolveGates(opts.featureGates, release, opts.dynamicMig === true, '--feature-gates');
      const source = profileSource(file);
      const profile = resolveProfile(file, source);
      const { machine } = validateProfile(profile, {
        dynamicMig: gates.DynamicMIG,
        nics: opts.nics,
        release,
        gates,
      });
      const models = gpuSummary({
        models: profile.spec.models,
        gpus: machine.gpus.map((g) => ({ model: g.model.key })),
      });
      const mig = machine.gpus.filter((g) => g.migEnabled);
      const instances = mig.reduce((n, g) => n + g.migInstances.length, 0);
      write(
        `${source}: valid MachineProfile ${JSON.stringify(profile.name)}: ${models.map((m) => `${m.count}x ${m.model}`).join(', ')}; ` +
          `${opts.nics ? String(machine.nics.length) : 'no'} NIC(s)${opts.nics ? '' : ' (--no-nics)'}; driver ${machine.driverVersion}; MIG on ${mig.length} GPU(s) with ${instances} instance(s)\n`,
      );
    });
}

export function topoCommand(write: (s: string) => void): Command {
  return new Command('topo')
    .description('show NUMA nodes, PCIe roots, GPUs and NICs, and which GPU–NIC alignments a claim can get')
    .requiredOption('-p, --profile <preset|file.yaml>', 'a preset name or a MachineProfile file')
    .addOption(nodeNameOption('node name (the seed of the GPU UUIDs)', { default: 'node' }))
    .option('--no-nics', 'GPUs only: leave the NICs out')
    .addOption(outputOption(['json', 'yaml'], 'topo'))
    .addHelpText(
      'after',
      examplesText(['fakegpu topo -p dgx-h100', 'fakegpu topo -p aws-p5.48xlarge -o json']),
    )
    .action((opts: { profile: string; nodeName: string; nics: boolean; output?: 'json' | 'yaml' }) => {
      const built = buildMachine(resolveProfile(opts.profile), {
        nodeName: checkNodeName(opts.nodeName, '--node-name'),
        dynamicMig: false,
      });
      const machine = opts.nics ? built : { ...built, nics: [] };
      const t = topology(machine);
      if (opts.output === undefined) {
        write(renderTopology(machine, t));
        return;
      }
      write(
        serialize(
          {
            profile: machine.profile,
            numa: t.numa.map((n) => ({
              numaNode: n.numaNode,
              roots: n.roots.map((r) => ({
                root: r.root,
                gpus: r.gpus.map((g) => ({ name: `gpu-${g.minor}`, busId: g.busId, model: g.model.name })),
                nics: r.nics.map((x) => ({
                  name: x.primary ? null : nicDeviceName(x),
                  busId: x.busId,
                  model: x.model.key,
                  ifName: x.ifName,
                  rdmaDevice: x.rdmaDevice,
                  primary: x.primary,
                })),
              })),
            })),
            alignment: t.alignment,
          },
          opts.output,
        ),
      );
    });
}
