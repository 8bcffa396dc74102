import { writeFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { kwokInstanceTypes } from '../tools/karpenter/instance-types.js';
import { INSTANCE_TYPE_LABEL } from '../model/preset/index.js';
import { ensureComponent, moduleDir, type Toolchain } from './build.js';
import type { Layout } from './config.js';
import { env, goMemoryLimit } from './components.js';
import { installUpstreamCrds } from './crds.js';
import { applyObjects } from './kubectl.js';
import { httpOk, waitFor } from './probe.js';
import { startDaemon, type Started } from './process.js';
import { REPO_ROOT } from '../process/repo.js';
import { binaryOf, releaseOfState, type State } from './state.js';
import { karpenterTemplates, type TemplateOptions } from '../tools/karpenter/templates.js';
import { DEFAULT_RELEASE } from '../model/device/release.js';
import { parseConsumableShares } from '../model/device/consumable-shares.js';
import { resolveGates } from '../model/feature-gates/parse.js';
import { parseKubernetesVersion } from '../kube/types/version.js';

/** Karpenter's metrics and health probes, beside fakegpu's own ports. */
export const KARPENTER_METRICS = 51520;
export const KARPENTER_HEALTH = 51521;

/** The KWOKNodeClass every NodePool of the local cluster can name (Karpenter's KWOK provider has one kind). */
export const KWOK_NODE_CLASS = 'default';

/**
 * Karpenter's CRDs from its module, as its KWOK provider's chart installs them: `kwok/charts/crds` holds
 * NodePool, NodeClaim and the rest with the KWOK requirement keys allowed; `kwok/apis/crds` the
 * KWOKNodeClass, which no chart applies.
 */
function installKarpenterCrds(l: Layout, t: Toolchain, dir: string): void {
  installUpstreamCrds(
    l,
    t.bin,
    [join(dir, 'kwok', 'charts', 'crds'), join(dir, 'kwok', 'apis', 'crds')],
    'Karpenter',
  );
  applyObjects(
    l,
    t.bin,
    [
      {
        apiVersion: 'karpenter.kwok.sh/v1alpha1',
        kind: 'KWOKNodeClass',
        metadata: { name: KWOK_NODE_CLASS },
      },
    ],
    `creating KWOKNodeClass ${KWOK_NODE_CLASS}`,
  );
}

/** Where Karpenter-launched nodes are told apart: its NodePool's label on every node it makes. */
export const KARPENTER_NODEPOOL_LABEL = 'karpenter.sh/nodepool';

/**
 * What the fleet does for Karpenter's nodes. With GPUs as DRA devices, it publishes their NICs too:
 * Karpenter's allocator is told of each type's NICs, and GPU and NIC on one PCIe root is what a claim
 * may ask. With GPUs as `nvidia.com/gpu`, they are the device plugin's, and the fleet serves none of
 * Karpenter's nodes: a GPU offered both ways would be allocated twice.
 */
export function karpenterFleet(s: State): { nics: boolean; nodeSelector?: string } {
  if (!s.with?.includes('karpenter')) return { nics: false };
  if (s.karpenterGpus === 'extended-resource')
    return { nics: false, nodeSelector: `!${KARPENTER_NODEPOOL_LABEL}` };
  return { nics: s.nics !== false };
}

/**
 * Karpenter's KWOK provider as a host process, built from its module with fakegpu's main
 * (upstream/karpenter/main.go): it launches KWOK nodes of the instance types with a preset (`fakegpu export
 * karpenter-kwok`), which the cluster's KWOK keeps Ready (they carry KWOK's annotation) and the fleet
 * gives their devices by instance type. With `dra` (the default) each type also carries the slices its
 * nodes will publish (`fakegpu export karpenter`), and Karpenter's DRA allocator places claim pods on
 * them; with `extended-resource` Karpenter ignores DRA requests and its nodes are device-plugin nodes.
 */
export async function startKarpenter(
  l: Layout,
  t: Toolchain,
  s: State,
  log: (line: string) => void,
): Promise<Started> {
  const built = await ensureComponent(REPO_ROOT, 'karpenter', log);
  installKarpenterCrds(l, t, moduleDir(REPO_ROOT, 'karpenter', 'sigs.k8s.io/karpenter'));
  const offer = s.karpenterGpus ?? 'dra';
  const types = join(l.configDir, 'karpenter-instance-types.json');
  writeFileSync(types, `${JSON.stringify(kwokInstanceTypes(offer), null, 2)}\n`);
  const templates = join(l.configDir, 'karpenter-dynamic-resources.json');
  if (offer === 'dra')
    writeFileSync(
      templates,
      `${JSON.stringify({ instanceTypes: karpenterTemplates(templateOptions(s)) })}\n`,
    );
  log(`starting karpenter (GPUs as ${offer === 'dra' ? 'DRA devices' : 'nvidia.com/gpu'})`);
  const p = startDaemon(
    l.run,
    l.logs,
    'karpenter',
    join(built.bin, binaryOf('karpenter')),
    [`--metrics-port=${KARPENTER_METRICS}`, `--health-probe-port=${KARPENTER_HEALTH}`],
    {
      ...env(t),
      ...goMemoryLimit('karpenter', true, totalmem()),
      // Karpenter reads its kubeconfig from the environment only (its flag set has no --kubeconfig).
      KUBECONFIG: l.adminKubeconfig,
      // One replica outside the cluster: nothing to elect, and no namespace to hold the lease.
      DISABLE_LEADER_ELECTION: 'true',
      INSTANCE_TYPES_FILE_PATH: types,
      IGNORE_DRA_REQUESTS: offer === 'dra' ? 'false' : 'true',
      ...(offer === 'dra' ? { FAKEGPU_DYNAMIC_RESOURCES_FILE: templates } : {}),
    },
  );
  await waitFor('its /readyz', p, () => httpOk(`http://127.0.0.1:${KARPENTER_HEALTH}/readyz`), 120_000);
  return p;
}

/**
 * The templates as this cluster's fleet will publish: its release, dynamic MIG, NICs, and the gates and
 * consumable shares its command line gets (`fleetArgs`).
 */
function templateOptions(s: State): TemplateOptions {
  const gates = resolveGates(s.pluginGates ?? '', DEFAULT_RELEASE, s.dynamicMig, '--feature-gates');
  return {
    kubernetesVersion: parseKubernetesVersion(releaseOfState(s).version, 'kubernetes'),
    release: DEFAULT_RELEASE,
    dynamicMig: s.dynamicMig,
    // NICs in the templates exactly where the fleet publishes them on Karpenter's nodes.
    nics: karpenterFleet(s).nics,
    gates,
    consumableShares: parseConsumableShares(s.consumableShares, gates),
  };
}

/**
 * A NodePool of the local cluster's Karpenter: KWOK nodes of these instance types, disrupted as
 * `disruption` says. Its limit is on CPUs, which every type has: `nvidia.com/gpu` is capacity only where
 * the nodes offer GPUs that way, and a limit on it would let DRA nodes grow without bound.
 */
export function kwokNodePool(
  name: string,
  instanceTypes: readonly string[],
  disruption: { consolidationPolicy: 'WhenEmpty' | 'WhenEmptyOrUnderutilized'; consolidateAfter: string },
  /** CPUs the pool may hold in all: 52 p5.48xlarge at the default; a bench of more nodes says so. */
  cpuLimit = 10_000,
): unknown {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      template: {
        spec: {
          nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: KWOK_NODE_CLASS },
          requirements: [{ key: INSTANCE_TYPE_LABEL, operator: 'In', values: [...instanceTypes] }],
          expireAfter: 'Never',
        },
      },
      limits: { cpu: String(cpuLimit) },
      disruption,
    },
  };
}
