import type { ClusterNode } from '../tools/capture/cluster.js';
import type { ResourceSlice } from '../kube/types/resource.js';
import { parseListItems } from '../model/profile/load.js';
import { resolveProfile } from '../process/profile-file.js';
import { MiB, readBounded, type ReadLimit, writeOutput } from '../process/files.js';
import { DRIVER_NAME } from '../model/slice/build.js';
import { checkKubeconfig, layoutVersionOption } from './options.js';
import { gpuSummaryText as gpuSummary } from './commands.js';
import { Command, Option } from 'commander';
import type { Section } from '../tools/capture/bundle.js';
import type { Inputs } from '../tools/capture/inputs.js';
import { parseRelease, RELEASES } from '../model/device/release.js';
import { clip, FakegpuError } from '../errors.js';
import { checkSliceNames, readSlices } from '../model/slice/read.js';
import { OutputWithStatus, serialize, table } from './output.js';
import {
  examplesText,
  kubernetesVersionFlag,
  movedOutputOption,
  nodeNameOption,
  OUTPUT_DIR,
  OUTPUT_FILE,
  outputOption,
} from './flags.js';
import { DRANET } from '../model/nic/attributes.js';

const warn = (w: string): void => {
  process.stderr.write(`fakegpu: warning: ${w}\n`);
};

/** Exit status of `diff` when the two sides differ; 1 and 2 stay bad input and usage, as elsewhere. */
export const DIFFERENT = 3;

interface NodeFlags {
  bundle?: string;
  nvidiaSmiXml?: string;
  topo?: string;
  migLgip?: string;
  migLgipp?: string;
  lspci?: string;
  sysfs?: string;
  ibdev2netdev?: string;
  ipLink?: string;
  ipAddr?: string;
  net?: string;
  rdma?: string;
  ipRoute?: string;
  name?: string;
  anonymize?: boolean;
  nics: boolean;
  output: 'yaml' | 'json';
  outputFile?: string;
}

/** One input of `capture node`: nvidia-smi -q -x of 255 GPUs with MIG is under 10 MiB. */
const NODE_INPUT: ReadLimit = { bytes: 32 * MiB, what: 'one input of capture node' };
const BUNDLE: ReadLimit = { bytes: 64 * MiB, what: 'a capture bundle' };
/**
 * Saved ResourceSlices or Nodes: about 3,000 nodes of 8 GPUs and 8 NICs as YAML. Parsing takes some
 * 25 times the text's size; a larger cluster is captured live (--kubeconfig).
 */
const SAVED_OBJECTS: ReadLimit = { bytes: 64 * MiB, what: 'saved Kubernetes objects' };

/** Flag → bundle section: a flag given wins over the bundle's section. */
const FLAGS: readonly [keyof NodeFlags, Section, string][] = [
  ['nvidiaSmiXml', 'nvidia-smi-xml', '--nvidia-smi-xml'],
  ['topo', 'topo', '--topo'],
  ['migLgip', 'mig-lgip', '--mig-lgip'],
  ['migLgipp', 'mig-lgipp', '--mig-lgipp'],
  ['lspci', 'lspci', '--lspci'],
  ['sysfs', 'pci', '--sysfs'],
  ['ibdev2netdev', 'ibdev2netdev', '--ibdev2netdev'],
  ['ipLink', 'ip-link', '--ip-link'],
  ['ipAddr', 'ip-addr', '--ip-addr'],
  ['net', 'net', '--net'],
  ['rdma', 'rdma', '--rdma'],
  ['ipRoute', 'ip-route', '--ip-route'],
];

function nodeCommand(write: (s: string) => void): Command {
  return new Command('node')
    .description('turn what a real GPU node shows (nvidia-smi -q -x and more) into a MachineProfile')
    .option('--bundle <file>', 'the output of the script `fakegpu capture script` prints, run on the node')
    .option('--nvidia-smi-xml <file>', 'nvidia-smi -q -x')
    .option('--topo <file>', 'nvidia-smi topo -m (GPU NUMA nodes)')
    .option('--mig-lgip <file>', "nvidia-smi mig -lgip (checked against the catalog's MIG profiles)")
    .option('--mig-lgipp <file>', 'nvidia-smi mig -lgipp (their placements)')
    .option('--lspci <file>', 'lspci -D -vmm [-nn] (NUMA nodes, NICs)')
    .option('--sysfs <file>', 'ls -l /sys/bus/pci/devices (PCIe roots)')
    .option('--ibdev2netdev <file>', 'ibdev2netdev [-v] (RDMA device → interface)')
    .option('--ip-link <file>', 'ip -j link (MAC, MTU)')
    .option('--ip-addr <file>', 'ip -j addr (IPv4 addresses)')
    .option(
      '--net <file>',
      "interfaces' PCI functions, a line `<ifname> <readlink -f /sys/class/net/<ifname>/device>` each",
    )
    .option(
      '--rdma <file>',
      "RDMA devices' PCI functions, a line `<dev> <readlink -f /sys/class/infiniband/<dev>/device>` each",
    )
    .option('--ip-route <file>', 'ip -j route show default (which interface is the front end)')
    .option('--name <name>', 'metadata.name of the profile (default: from the GPUs)')
    .option(
      '--anonymize',
      "leave GPU UUIDs and MACs out (each node derives its own), replace IPv4 addresses by documentation ones and the fabric's cluster UUID by a hash",
    )
    .option('--no-nics', 'leave the NICs out of the profile (GPUs only)')
    .addOption(
      outputOption(['yaml', 'json'], 'capture node', { default: 'yaml', file: OUTPUT_FILE }).default('yaml'),
    )
    .option(`${OUTPUT_FILE} <file>`, 'write the profile here instead of standard output')
    .addHelpText(
      'after',
      examplesText([
        'fakegpu capture script > capture.sh   # then on the GPU node: sh capture.sh > capture.txt',
        `fakegpu capture node --bundle capture.txt ${OUTPUT_FILE} my-node.yaml --anonymize`,
        'fakegpu capture node --nvidia-smi-xml smi.xml --lspci lspci.txt -o json',
      ]),
    )
    .action(async (f: NodeFlags) => {
      // Loaded when used, as in every command: the XML parsers are no part of other commands' start-up.
      const [{ parseBundle }, { readNodeInputs }, { captureNode }] = await Promise.all([
        import('../tools/capture/bundle.js'),
        import('../tools/capture/inputs.js'),
        import('../tools/capture/node.js'),
      ]);
      const inputs: Inputs = {};
      if (f.bundle !== undefined) {
        const bundle = parseBundle(readBounded(f.bundle, '--bundle', BUNDLE), f.bundle);
        for (const failed of bundle.failed) warn(`${f.bundle}: ${failed}: its command failed; left out`);
        for (const [name, text] of Object.entries(bundle.sections))
          inputs[name as Section] = { text, source: `${f.bundle} (${name})` };
      }
      for (const [key, section, flag] of FLAGS) {
        const path = f[key];
        if (typeof path === 'string')
          inputs[section] = { text: readBounded(path, flag, NODE_INPUT), source: path };
      }
      if (!inputs['nvidia-smi-xml'])
        throw new FakegpuError(
          '--nvidia-smi-xml',
          f.bundle === undefined
            ? 'required: the output of nvidia-smi -q -x (or --bundle)'
            : `${f.bundle} has no nvidia-smi-xml section (nvidia-smi missing or failed on the node)`,
        );
      const read = readNodeInputs(inputs);
      const captured = captureNode(read.node, { name: f.name, anonymize: f.anonymize === true });
      for (const w of [...read.warnings, ...captured.warnings]) warn(w);
      const { profile } = captured;
      if (!f.nics) delete profile.spec.nics;
      const text = serialize(profile, f.output);
      if (f.outputFile === undefined) write(text);
      else writeOutput(f.outputFile, text, OUTPUT_FILE);
    });
}

interface ClusterFlags {
  kubeconfig?: string;
  slices?: string;
  nodes?: string;
  outputDir: string;
  kubernetesVersion: string;
}

/** Every object at `path`, through the kubeconfig given or the default one. */
async function listAll<T>(kubeconfig: string | undefined, path: string): Promise<T[]> {
  const [{ KubeConfig }, { clientOf, loadKubeconfigInto }, { listEvery, listPage }] = await Promise.all([
    import('@kubernetes/client-node'),
    import('../kube/client.js'),
    import('../kube/api.js'),
  ]);
  const http = clientOf(loadKubeconfigInto(new KubeConfig(), kubeconfig));
  return listEvery<T>((q) => listPage<T>(http, path, q, 'application/json'));
}

function readNodes(path: string): ClusterNode[] {
  return parseListItems(readBounded(path, '--nodes', SAVED_OBJECTS), '--nodes', 'NodeList') as ClusterNode[];
}

function clusterCommand(write: (s: string) => void): Command {
  return new Command('cluster')
    .description(
      "turn a cluster's GPU nodes (their ResourceSlices, labels and taints) into a FleetPools file and one profile per machine shape",
    )
    .option('--kubeconfig <file>', 'read the cluster itself (default: KUBECONFIG or ~/.kube/config)')
    .option('--slices <file>', 'or read saved slices: kubectl get resourceslices -o yaml')
    .option('--nodes <file>', 'with --slices: kubectl get nodes -o yaml (labels and taints)')
    .requiredOption(`${OUTPUT_DIR} <dir>`, 'write pools.yaml, profiles/ and slices/ here')
    .addOption(movedOutputOption('capture cluster', OUTPUT_DIR))
    .addOption(layoutVersionOption())
    .addHelpText(
      'after',
      examplesText([
        `fakegpu capture cluster --kubeconfig ~/.kube/config ${OUTPUT_DIR} captured`,
        `fakegpu capture cluster --slices slices.yaml --nodes nodes.yaml ${OUTPUT_DIR} captured`,
        'fakegpu cluster up --kwok-pools captured/pools.yaml',
      ]),
    )
    .action(async (f: ClusterFlags) => {
      const [{ captureCluster }, { writeCapture }, { parsePools }] = await Promise.all([
        import('../tools/capture/cluster.js'),
        import('../tools/capture/write.js'),
        import('../fleet/pools.js'),
      ]);
      const kubernetesVersion = kubernetesVersionFlag(f.kubernetesVersion);
      if (f.slices !== undefined && f.kubeconfig !== undefined)
        throw new FakegpuError('--slices', 'give --slices (saved) or --kubeconfig (live), not both');
      if (f.nodes !== undefined && f.slices === undefined)
        throw new FakegpuError('--nodes', 'needs --slices');
      const source = f.slices ?? `the cluster of ${f.kubeconfig ?? 'the default kubeconfig'}`;
      let slices: ResourceSlice[];
      let nodes: ClusterNode[];
      if (f.slices !== undefined) {
        slices = readSlices(readBounded(f.slices, '--slices', SAVED_OBJECTS), f.slices, '--slices');
        checkSliceNames(slices, f.slices, '--slices');
        nodes = f.nodes === undefined ? [] : readNodes(f.nodes);
      } else {
        await checkKubeconfig(f.kubeconfig, '--kubeconfig');
        const { NODES_PATH, SLICES_PATH } = await import('../kube/api.js');
        try {
          slices = await listAll<ResourceSlice>(f.kubeconfig, SLICES_PATH);
          nodes = await listAll<ClusterNode>(f.kubeconfig, NODES_PATH);
        } catch (e) {
          if (e instanceof FakegpuError) throw e;
          throw new FakegpuError(
            '--kubeconfig',
            `listing the cluster failed: ${clip(e instanceof Error ? e.message : String(e))}`,
          );
        }
      }
      const captured = captureCluster(nodes, slices, kubernetesVersion);
      if (captured.pools.length === 0 && captured.verbatim.length === 0)
        throw new FakegpuError(
          f.slices ? '--slices' : '--kubeconfig',
          `${source} has no node with ${DRIVER_NAME} slices`,
        );
      const written = writeCapture(f.outputDir, captured, source);
      // What was written must load as the fleet loads it: every pool resolved and rendered once.
      parsePools(written.text, written.pools);
      write(
        table(
          ['POOL', 'NODES', 'GPUS', 'DYNAMIC MIG'],
          captured.pools.map((p) => [
            p.name,
            String(p.nodes.length),
            gpuSummary(p.spec),
            p.dynamicMig ? 'yes' : 'no',
          ]),
        ),
      );
      for (const v of captured.verbatim)
        write(`kept verbatim (slices/${v.node}.yaml): node ${v.node}: ${v.why}\n`);
      for (const [driver, list] of captured.otherDrivers)
        write(
          `kept verbatim (slices/${driver}.yaml): ${list.length} slice(s) of ${driver}, which fakegpu does not publish\n`,
        );
      write(`wrote ${written.pools}\n`);
    });
}

export function captureCommand(write: (s: string) => void): Command {
  return new Command('capture')
    .description('make profiles from real GPU nodes and fleets from real clusters')
    .addHelpText(
      'after',
      examplesText([
        'fakegpu capture script > capture.sh',
        `fakegpu capture node --bundle capture.txt ${OUTPUT_FILE} my-node.yaml`,
        `fakegpu capture cluster --kubeconfig ~/.kube/config ${OUTPUT_DIR} captured`,
      ]),
    )
    .addCommand(nodeCommand(write))
    .addCommand(clusterCommand(write))
    .addCommand(
      new Command('script')
        .description('print the shell script that collects what `capture node --bundle` reads')
        .addHelpText(
          'after',
          examplesText(['fakegpu capture script > capture.sh   # then: sh capture.sh > capture.txt']),
        )
        .action(async () => {
          const { CAPTURE_SCRIPT } = await import('../tools/capture/bundle.js');
          write(CAPTURE_SCRIPT);
        }),
    );
}

interface DiffFlags {
  capture: string;
  profile: string;
  nodeName?: string;
  draDriverRelease?: string;
  kubernetesVersion: string;
  ignore?: string;
  nics: boolean;
  output?: 'json' | 'yaml';
}

export function diffCommand(write: (s: string) => void): Command {
  return new Command('diff')
    .description(
      "compare a node's captured ResourceSlices with what fakegpu renders for it, device by device; exit 3 on any difference",
    )
    .requiredOption(
      '--capture <file>',
      'ResourceSlices as kubectl get resourceslices -o yaml|json saves them',
    )
    .requiredOption('-p, --profile <preset|file.yaml>', 'a preset name or a MachineProfile file')
    .addOption(nodeNameOption("the node to compare (default: the capture's only node)"))
    .addOption(
      new Option(
        '--dra-driver-release <release>',
        'NVIDIA DRA driver release (default: the closest)',
      ).choices(Object.keys(RELEASES)),
    )
    .addOption(layoutVersionOption())
    .option(
      '--ignore <names>',
      'attributes or capacities (e.g. uuid) the capture cannot know, comma-separated',
    )
    .option('--no-nics', "compare the GPUs' slices only, leaving the capture's NIC slices (DRANET's) out")
    .addOption(outputOption(['json', 'yaml'], 'diff'))
    .addHelpText(
      'after',
      examplesText([
        'kubectl get resourceslices -o yaml > slices.yaml',
        'fakegpu diff --capture slices.yaml -p dgx-h100 -n node-1 --ignore uuid',
        'fakegpu diff --capture slices.yaml -p my-node.yaml --no-nics -o json',
      ]),
    )
    .action(async (f: DiffFlags) => {
      const [{ compareNode }, { renderDiff }] = await Promise.all([
        import('../tools/capture/compare.js'),
        import('../tools/capture/diff.js'),
      ]);
      const read = readSlices(readBounded(f.capture, '--capture', SAVED_OBJECTS), f.capture, '--capture');
      const captured = f.nics ? read : read.filter((s) => s.spec.driver !== DRANET);
      const ignore = new Set(
        (f.ignore ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== ''),
      );
      const result = compareNode(resolveProfile(f.profile), captured, {
        node: f.nodeName,
        release:
          f.draDriverRelease === undefined
            ? undefined
            : parseRelease(f.draDriverRelease, '--dra-driver-release'),
        kubernetesVersion: kubernetesVersionFlag(f.kubernetesVersion),
        ignore,
      });
      if (f.output !== undefined) write(serialize(result, f.output));
      else {
        write(
          `node ${result.node}, NVIDIA DRA driver ${result.release}${result.dynamicMig ? ', dynamic MIG' : ''}; compared ${result.drivers.join(', ')}${result.skipped.length > 0 ? `; not fakegpu's: ${result.skipped.join(', ')}` : ''}\n`,
        );
        write(renderDiff(result, { capture: 'capture', fakegpu: 'fakegpu' }));
      }
      if (result.differences.length > 0) throw new OutputWithStatus(DIFFERENT);
    });
}
