import { join } from 'node:path';
import { Command, Option } from 'commander';
import { checkNamespace } from '../kube/types/names.js';
import { parseRelease, RELEASES } from '../model/device/release.js';
import { parseConsumableShares } from '../model/device/consumable-shares.js';
import { FakegpuError } from '../errors.js';
import type { PluginOptions } from '../node/plugin/run.js';
import { resolveProfile } from '../process/profile-file.js';
import { parseKubernetesVersion } from '../kube/types/version.js';
import { checkIgnoredXids, ignoredXids } from '../model/health/taints.js';
import { checkNodeName, renderSlices } from '../model/render.js';
import { checkSliceNames } from '../model/slice/build.js';
import { DRANET } from '../model/nic/attributes.js';
import { checkDriverName, DEFAULT_KUBERNETES_VERSION, nicNumaOption } from './commands.js';
import {
  checkServingFlags,
  dcgmEndpointOption,
  dcgmVersionOption,
  driverNameOption,
  driverNamespaceOption,
  driverReleaseOption,
  dynamicMigOption,
  envOption,
  kubeconfigOption,
  noComputeDomainsOption,
  resolveGates,
  featureGatesOption,
  logLevelOf,
  logVerbosityOption,
  consumableSharesOption,
  sourceOf,
} from './options.js';
import { examples } from './flags.js';

interface Flags {
  nodeName: string;
  v: string;
  profile: string;
  profileLabel?: string;
  dynamicMig?: boolean;
  driverName: string;
  driverVersion?: string;
  draDriverRelease: string;
  kubeletPluginsDir: string;
  kubeletRegistrarDir: string;
  cdiRoot: string;
  stateDir?: string;
  slicesFile?: string;
  kubeconfig?: string;
  httpEndpoint: string;
  dcgmEndpoint: string;
  dcgmExporterVersion: string;
  featureGates: string;
  consumableShares: string;
  additionalXidsToIgnore: string;
  healthService?: boolean;
  resetCheckpoint?: boolean;
  nics: boolean;
  computeDomains: boolean;
  driverNamespace: string;
  gpuCliqueLabel?: boolean;
  nicDriverName: string;
  nicNumaAttribute: string;
}

/** The machine this node pretends to be and the kubelet's directories. */
function machineFlags(c: Command): Command {
  return c
    .addOption(envOption('-n, --node-name <name>', 'this node', 'NODE_NAME').makeOptionMandatory())
    .addOption(
      envOption(
        '-p, --profile <preset|file.yaml>',
        'the machine this node pretends to be',
        'FAKEGPU_PROFILE',
      ).makeOptionMandatory(),
    )
    .addOption(
      envOption(
        '--profile-label <key>',
        'a node label whose value, if set on this node, overrides --profile',
        'FAKEGPU_PROFILE_LABEL',
      ),
    )
    .addOption(dynamicMigOption())
    .addOption(driverNameOption())
    .addOption(
      envOption(
        '--driver-version <version>',
        'NVIDIA driver version, overriding the profile',
        'FAKEGPU_DRIVER_VERSION',
      ),
    )
    .addOption(driverReleaseOption())
    .addOption(
      envOption(
        '--kubelet-plugins-dir <dir>',
        'kubelet plugins directory',
        'KUBELET_PLUGINS_DIRECTORY_PATH',
        '/var/lib/kubelet/plugins',
      ),
    )
    .addOption(
      envOption(
        '--kubelet-registrar-dir <dir>',
        'kubelet plugin registration directory',
        'KUBELET_REGISTRAR_DIRECTORY_PATH',
        '/var/lib/kubelet/plugins_registry',
      ),
    );
}

/** The plugin's endpoints, state, health and its drivers beside the GPUs. */
function serviceFlags(c: Command): Command {
  return c
    .addOption(envOption('--cdi-root <dir>', 'where CDI specs are written', 'CDI_ROOT', '/var/run/cdi'))
    .addOption(
      envOption(
        '--state-dir <dir>',
        'checkpoint, MIG state, device views (default: <plugins dir>/<driver name>)',
        'FAKEGPU_STATE_DIR',
      ),
    )
    .addOption(
      envOption(
        '--slices-file <file.yaml>',
        'publish these ResourceSlices verbatim instead of rendering them',
        'FAKEGPU_SLICES_FILE',
      ),
    )
    .addOption(kubeconfigOption())
    .addOption(
      envOption(
        '--http-endpoint <host:port>',
        '/healthz, /readyz (registered with the kubelet) and /metrics; empty to disable',
        'HTTP_ENDPOINT',
        '127.0.0.1:51516',
      ),
    )
    .addOption(dcgmEndpointOption("this node's"))
    .addOption(dcgmVersionOption())
    .addOption(featureGatesOption('FEATURE_GATES'))
    .addOption(logVerbosityOption())
    .addOption(consumableSharesOption('CONSUMABLE_SHARES'))
    .addOption(
      envOption(
        '--additional-xids-to-ignore <xids>',
        'with NVMLDeviceHealthCheck: XIDs tainted with effect None besides 13,31,43,45,68,109',
        'ADDITIONAL_XIDS_TO_IGNORE',
        '',
      ),
    )
    .addOption(
      new Option(
        '--health-service',
        "with NVMLDeviceHealthCheck: serve the kubelet's DRAResourceHealth, so pod status shows device health (beyond NVIDIA's driver)",
      ).env('FAKEGPU_HEALTH_SERVICE'),
    )
    .addOption(
      new Option(
        '--reset-checkpoint',
        "start with an empty checkpoint if the existing one is damaged, and with the profile's NVML state (and no prepared claims) if that file is (good ones are kept)",
      ).env('FAKEGPU_RESET_CHECKPOINT'),
    )
    .addOption(
      new Option('--no-nics', "do not run DRANET's side (the profile's NICs as a second driver)").env(
        'FAKEGPU_NO_NICS',
      ),
    )
    .addOption(envOption('--nic-driver-name <name>', 'driver name of the NICs', 'NIC_DRIVER_NAME', DRANET))
    .addOption(nicNumaOption().env('FAKEGPU_NIC_NUMA_ATTRIBUTE'))
    .addOption(noComputeDomainsOption('run the compute-domain.nvidia.com side'))
    .addOption(driverNamespaceOption())
    .addOption(
      new Option(
        '--gpu-clique-label',
        "label the node nvidia.com/gpu.clique=<clusterUUID>.<cliqueId> (NVIDIA's gpuCliqueLabelEnabled; else GPU Feature Discovery's job)",
      ).env('FAKEGPU_GPU_CLIQUE_LABEL'),
    );
}

export function pluginCommand(): Command {
  const c = serviceFlags(
    machineFlags(
      new Command('plugin').description(
        "run as the node's DRA kubelet plugin: publish slices, prepare claims with CDI, fake nvidia-smi",
      ),
    ),
  ).action(pluginAction);
  return examples(c, [
    'fakegpu plugin -n node-1 -p dgx-h100 --kubeconfig ~/.kube/config',
    'NODE_NAME=node-1 FAKEGPU_PROFILE=dgx-h100 fakegpu plugin --dynamic-mig   # as the chart runs it',
  ]);
}

async function pluginAction(f: Flags, cmd: Command): Promise<void> {
  // Every input is checked before anything starts (sockets, API calls), each refused in one line.
  const nodeField = sourceOf(cmd, 'nodeName', '--node-name');
  const nodeName = checkNodeName(f.nodeName, nodeField);
  const level = logLevelOf(f.v, cmd);
  const driverName = checkDriverName(f.driverName, sourceOf(cmd, 'driverName', '--driver-name'));
  const release = parseRelease(f.draDriverRelease, '--dra-driver-release');
  const gates = resolveGates(
    f.featureGates,
    release,
    f.dynamicMig === true,
    sourceOf(cmd, 'featureGates', '--feature-gates'),
  );
  const dynamicMig = gates.DynamicMIG;
  const consumableShares = parseConsumableShares(
    f.consumableShares,
    gates,
    sourceOf(cmd, 'consumableShares', '--consumable-shares'),
  );
  const ignored = checkIgnoredXids(
    f.additionalXidsToIgnore,
    sourceOf(cmd, 'additionalXidsToIgnore', '--additional-xids-to-ignore'),
  );
  if (f.healthService && !gates.NVMLDeviceHealthCheck)
    throw new FakegpuError(
      sourceOf(cmd, 'healthService', '--health-service'),
      'needs the feature gate NVMLDeviceHealthCheck=true: health is what its monitor finds',
    );
  const profile = resolveProfile(f.profile);
  const computeDomains = f.computeDomains
    ? {
        namespace: checkNamespace(f.driverNamespace, sourceOf(cmd, 'driverNamespace', '--driver-namespace')),
        gpuCliqueLabel: f.gpuCliqueLabel === true,
      }
    : undefined;
  const nicDriverName = f.nics
    ? checkDriverName(f.nicDriverName, sourceOf(cmd, 'nicDriverName', '--nic-driver-name'))
    : f.nicDriverName;
  const nics = f.nics
    ? {
        driverName: nicDriverName,
        standardNumaNode: f.nicNumaAttribute === 'standard',
        stateDir: f.stateDir ? join(f.stateDir, nicDriverName) : join(f.kubeletPluginsDir, nicDriverName),
      }
    : undefined;
  // As render checks them, under this command's own flag.
  checkSliceNames(nodeName, { driverName, indexedNames: RELEASES[release].indexedSliceNames }, nodeField);
  if (nics) checkSliceNames(nodeName, { driverName: nics.driverName, indexedNames: true }, nodeField);
  // The whole render, as validate runs it: a machine that cannot be built (a MIG layout that does not
  // fit, a driver version) or whose slices the API server would refuse stops here.
  renderSlices(profile, {
    nodeName,
    dynamicMig,
    driverVersion: f.driverVersion,
    driverName,
    kubernetesVersion: parseKubernetesVersion(DEFAULT_KUBERNETES_VERSION, '--kubernetes-version'),
    release,
    nics,
    gates,
    consumableShares,
  });
  const dcgmStyle = await checkServingFlags(f, cmd);
  // Loaded here: gRPC and its protobuf parser, the API client and the logger are no part of other
  // commands' start-up.
  const [{ pino }, { runPlugin }, { runUntilStopped }] = await Promise.all([
    import('pino'),
    import('../node/plugin/run.js'),
    import('../process/shutdown.js'),
  ]);
  const log = pino({ name: 'fakegpu-plugin', level, base: { node: nodeName } }, pino.destination(2));
  const options: PluginOptions = {
    nodeName,
    profile,
    profileLabel: f.profileLabel === '' ? undefined : f.profileLabel,
    dynamicMig,
    driverName,
    driverVersion: f.driverVersion,
    release,
    kubeletPluginsDir: f.kubeletPluginsDir,
    kubeletRegistrarDir: f.kubeletRegistrarDir,
    cdiRoot: f.cdiRoot,
    stateDir: f.stateDir ?? join(f.kubeletPluginsDir, driverName),
    slicesFile: f.slicesFile,
    kubeconfig: f.kubeconfig,
    httpEndpoint: f.httpEndpoint,
    dcgmEndpoint: f.dcgmEndpoint || undefined,
    dcgmStyle,
    gates,
    consumableShares,
    ignoredXids: ignoredXids(ignored),
    healthService: f.healthService === true,
    resetCheckpoint: f.resetCheckpoint === true,
    nics,
    computeDomains,
    log,
  };
  await runUntilStopped(() => runPlugin(options), { log });
}
