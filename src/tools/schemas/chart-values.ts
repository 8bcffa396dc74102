import { z } from 'zod';
import { DRIVER_NAME_PATTERN } from '../../kube/types/names.js';
import { GATE_NAMES, LOGGING_GATES } from '../../model/feature-gates/gates.js';
import type { Extras } from './convert.js';

/**
 * The Helm chart's values (deploy/helm/fakegpu/values.yaml), the source of its values.schema.json:
 * Helm refuses values outside it before rendering anything, so a typo in a key is one line at install
 * time instead of a pod that starts with a default. What the templates pass to Kubernetes unread
 * (resources, tolerations, a pool's inline profile) is only an object or a list here.
 */

const Port = z.number().int().min(1).max(65535);
const HostPath = z.string().regex(/^\//);
const StringMap = z.record(z.string(), z.string());
const AnyObject = z.record(z.string(), z.unknown());
const AnyList = z.array(z.unknown());
const Switch = z.strictObject({ enabled: z.boolean().optional() });
const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;
/** Prometheus's durations as a ServiceMonitor takes them. */
const Duration = z.string().regex(/^\d+(ms|s|m|h)$/);
const DriverName = z.string().regex(DRIVER_NAME_PATTERN).max(63);

/**
 * `A=true,B=false` over NVIDIA's gate names, as the plugin reads `--feature-gates`; which release has
 * which gate, and NVIDIA's rules, are the plugin's to refuse when it starts.
 */
function gatesPattern(): RegExp {
  const gate = `(${[...GATE_NAMES, ...LOGGING_GATES].join('|')})=(true|false)`;
  return new RegExp(`^(${gate}(,${gate})*)?$`);
}

const Dcgm = z.strictObject({
  enabled: z.boolean().optional(),
  port: Port.optional(),
  /** styleOf's versions: `4.8.4`, or `4.6.0-4.8.3` with the DCGM version first; 3.x and 4.x. */
  exporterVersion: z
    .string()
    .regex(/^(\d+\.\d+\.\d+-)?[34]\.\d+\.\d+$/)
    .optional(),
  service: Switch.optional(),
  serviceMonitor: z
    .strictObject({
      enabled: z.boolean().optional(),
      interval: Duration.optional(),
      scrapeTimeout: Duration.optional(),
      honorLabels: z.boolean().optional(),
      additionalLabels: StringMap.optional(),
      relabelings: z.array(AnyObject).optional(),
    })
    .optional(),
  grafanaDashboard: z
    .strictObject({
      enabled: z.boolean().optional(),
      labels: StringMap.optional(),
      annotations: StringMap.optional(),
    })
    .optional(),
});

const PodMonitor = z.strictObject({
  enabled: z.boolean().optional(),
  interval: Duration.optional(),
  additionalLabels: StringMap.optional(),
});

const Plugin = z.strictObject({
  resetCheckpoint: z.boolean().optional(),
  additionalXidsToIgnore: z
    .string()
    .regex(/^[0-9, ]*$/)
    .optional(),
  healthService: z.boolean().optional(),
  admissionPolicy: Switch.optional(),
});

const ComputeDomains = z.strictObject({
  gpuCliqueLabel: z.boolean().optional(),
  daemonImage: z
    .strictObject({
      repository: z.string().optional(),
      tag: z.string().optional(),
      // Empty: the chart's `image.pullPolicy`.
      pullPolicy: z.enum(['', ...PULL_POLICIES]).optional(),
    })
    .optional(),
  controller: z
    .strictObject({
      httpPort: Port.optional(),
      resources: AnyObject.optional(),
      nodeSelector: StringMap.optional(),
      tolerations: AnyList.optional(),
    })
    .optional(),
});

/** A pool of the fleet's FleetPools (src/fleet/pools.ts), which the fleet checks in full when it starts. */
const Pool = z.strictObject({
  profile: z.string().min(1).optional(),
  spec: AnyObject.optional(),
  dynamicMig: z.boolean().optional(),
  featureGates: z.string().regex(gatesPattern()).optional().describe("NVIDIA's gates for the pool's nodes"),
  nodes: AnyObject.optional().describe(
    'what cluster up --kwok-pools creates; the fleet serves whatever nodes carry the pool label',
  ),
});

const Fleet = z.strictObject({
  enabled: z.boolean().optional(),
  nodeSelector: z.string().optional(),
  profile: z.string().optional(),
  poolLabel: z.string().min(1).optional(),
  rackLabel: z.string().min(1).optional(),
  pools: z.record(z.string(), Pool).optional(),
  nics: z.boolean().optional(),
  concurrency: z.number().int().min(1).optional(),
  qps: z.number().int().min(0).optional(),
  burst: z.number().int().min(1).optional(),
  replicas: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('fleet pods; more than one split the nodes between them by shard Leases'),
  shards: z
    .number()
    .int()
    .min(1)
    .max(1024)
    .optional()
    .describe('shards the nodes are split in, with replicas > 1'),
  httpPort: Port.optional(),
  resources: AnyObject.optional(),
  podNodeSelector: StringMap.optional(),
  podTolerations: AnyList.optional(),
});

/** NVIDIA's ComputeDomain controller values; fakegpu's own sit under computeDomains.controller. */
const NvidiaController = z.strictObject({
  replicas: z.int().min(1).max(10).optional(),
  leaderElection: z
    .strictObject({
      enabled: z.boolean().optional(),
      leaseDuration: z.string().optional(),
      renewDeadline: z.string().optional(),
      retryPeriod: z.string().optional(),
    })
    .optional(),
  affinity: z.record(z.string(), z.unknown()).nullable().optional(),
});

export const ChartValues = z.strictObject({
  image: z.strictObject({
    repository: z.string().min(1).optional(),
    tag: z.string().optional(),
    pullPolicy: z.enum(PULL_POLICIES).optional(),
  }),
  driverName: DriverName,
  profile: z.string().min(1),
  profileLabel: z.string().optional(),
  dynamicMig: z.boolean().optional(),
  featureGates: z
    .union([
      z.string().regex(gatesPattern()),
      z.partialRecord(z.enum([...GATE_NAMES, ...LOGGING_GATES]), z.boolean()),
    ])
    .optional(),
  /**
   * NVIDIA's `consumableShares` (needs featureGates ConsumableShares=true): '', 'disabled', 'memory',
   * 'unlimited' or a positive integer, as `--set consumableShares=4` gives it; the plugin and the fleet
   * refuse anything else in NVIDIA's words.
   */
  consumableShares: z
    .union([z.string().regex(/^(|disabled|memory|unlimited|\+?0*[1-9][0-9]*)$/), z.number().int().min(1)])
    .optional(),
  // NVIDIA's chart's values (values.yaml says each one's meaning here); the templates refuse, in one line
  // naming the value, what fakegpu cannot honour, so the schema takes every value of the right type.
  gpuResourcesEnabledOverride: z.boolean().optional(),
  nvidiaDriverRoot: z.string().optional(),
  logVerbosity: z.union([z.int(), z.string()]).optional(),
  altProcDevices: z.string().optional(),
  controller: NvidiaController.optional(),
  nodeSelector: StringMap.optional(),
  tolerations: AnyList.optional(),
  kubeletPluginsDir: HostPath,
  kubeletRegistrarDir: HostPath,
  cdiRoot: HostPath,
  httpPort: Port.optional(),
  deviceClasses: Switch.optional(),
  uninstallCheck: Switch.optional().describe(
    'a pre-delete Job refusing helm uninstall while pods hold devices the plugin prepared on real nodes',
  ),
  dcgm: Dcgm.optional(),
  podMonitor: PodMonitor.optional().describe(
    "a Prometheus Operator PodMonitor of fakegpu's own /metrics (port http): the plugin's, the fleet's and the controller's, the scorecard among them",
  ),
  // Open: the plugin container's requests and limits sit beside the computeDomains switch.
  resources: z.object({ computeDomains: Switch.optional(), gpus: Switch.optional() }).optional(),
  priorityClassName: z.string().optional(),
  plugin: Plugin.optional(),
  computeDomains: ComputeDomains.optional(),
  nics: z
    .strictObject({
      enabled: z.boolean().optional(),
      driverName: DriverName.optional(),
      numaAttribute: z.enum(['dranet', 'standard']).optional(),
      deviceClass: z.boolean().optional(),
    })
    .optional(),
  fleet: Fleet.optional(),
});
export type ChartValues = z.input<typeof ChartValues>;

/** What zod cannot say of the values, by path (convert.ts's paths). */
export const CHART_EXTRAS: Extras = {
  // A pool is a preset or an inline profile, never both (parsePools refuses both, and neither).
  'fleet.pools{}': { oneOf: [{ required: ['profile'] }, { required: ['spec'] }] },
};

/** The `$schema` Helm has validated the chart's values with; zod writes draft-07's http: address. */
export const VALUES_SCHEMA_DIALECT = 'https://json-schema.org/draft-07/schema#';
