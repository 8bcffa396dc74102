import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kwokInstanceTypes } from '../tools/karpenter/instance-types.js';
import { INSTANCE_TYPE_LABEL } from '../model/preset/index.js';
import { ensureComponent, moduleDir, type Toolchain } from './build.js';
import type { Layout } from './config.js';
import { env } from './components.js';
import { installUpstreamCrds } from './crds.js';
import { applyObjects } from './kubectl.js';
import { httpOk, waitFor } from './probe.js';
import { startDaemon, type Started } from './process.js';
import { REPO_ROOT } from '../process/repo.js';
import { binaryOf } from './state.js';

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

/**
 * Karpenter's KWOK provider as a host process, built from its module: it launches KWOK nodes of the
 * instance types with a preset (`fakegpu export karpenter-kwok`), which the cluster's KWOK keeps Ready
 * (they carry KWOK's annotation) and the fleet gives their GPUs by instance type.
 */
export async function startKarpenter(l: Layout, t: Toolchain, log: (line: string) => void): Promise<Started> {
  const built = ensureComponent(REPO_ROOT, 'karpenter', log);
  installKarpenterCrds(l, t, moduleDir(REPO_ROOT, 'karpenter', 'sigs.k8s.io/karpenter'));
  const types = join(l.configDir, 'karpenter-instance-types.json');
  writeFileSync(types, `${JSON.stringify(kwokInstanceTypes(), null, 2)}\n`);
  log('starting karpenter');
  const p = startDaemon(
    l.run,
    l.logs,
    'karpenter',
    join(built.bin, binaryOf('karpenter')),
    [`--metrics-port=${KARPENTER_METRICS}`, `--health-probe-port=${KARPENTER_HEALTH}`],
    {
      ...env(t),
      // Karpenter reads its kubeconfig from the environment only (its flag set has no --kubeconfig).
      KUBECONFIG: l.adminKubeconfig,
      // One replica outside the cluster: nothing to elect, and no namespace to hold the lease.
      DISABLE_LEADER_ELECTION: 'true',
      INSTANCE_TYPES_FILE_PATH: types,
    },
  );
  await waitFor('its /readyz', p, () => httpOk(`http://127.0.0.1:${KARPENTER_HEALTH}/readyz`), 120_000);
  return p;
}

/**
 * A NodePool of the local cluster's Karpenter: KWOK nodes of these instance types, at most `gpus`
 * `nvidia.com/gpu` in all, disrupted as `disruption` says.
 */
export function kwokNodePool(
  name: string,
  instanceTypes: readonly string[],
  gpus: number,
  disruption: { consolidationPolicy: 'WhenEmpty' | 'WhenEmptyOrUnderutilized'; consolidateAfter: string },
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
      limits: { 'nvidia.com/gpu': String(gpus) },
      disruption,
    },
  };
}
