import { z } from 'zod';
import { LABEL_KEY } from '../../kube/types/names.js';
import { CliqueDaemons, ComputeDomainSpec, ComputeDomainStatus } from '../../model/compute-domain/schema.js';
import {
  FAULT_LIMITS,
  FAULT_RULES,
  GPUFAULT_KIND,
  GpuFaultSpec,
  GpuFaultStatus,
  GROUP,
  RFC3339,
  VERSION,
} from '../../model/fault/resource.js';
import { LIMITS, VALUES_RULE } from '../../model/fault/selector.js';
import { jsonSchema, type Extras, type JsonObject } from './convert.js';

/**
 * The CRDs of deploy/crds/: for each, what is not its schema (names, scope, version, subresources,
 * printer columns, the comment on top) and the zod schemas its OpenAPI schema is generated from.
 */

interface CrdSource {
  /** Under deploy/crds/ and the chart's crds/. */
  file: string;
  /** Why the CRD is as it is: the comment at the top of the file. */
  header: string;
  group: string;
  kind: string;
  plural: string;
  shortNames?: string[];
  scope: 'Cluster' | 'Namespaced';
  version: string;
  statusSubresource: boolean;
  printerColumns?: JsonObject[];
  /** The whole object: apiVersion, kind and metadata are the API server's (`object` below). */
  schema: z.ZodType;
}

/** An object of the API: its own fields beside apiVersion, kind and metadata, which the API server checks. */
function object<T extends z.ZodRawShape>(shape: T, description?: string) {
  const o = z.object({
    apiVersion: z.string().optional(),
    kind: z.string().optional(),
    metadata: z.object({}).optional(),
    ...shape,
  });
  return description === undefined ? o : o.describe(description);
}

const TIME: JsonObject = { format: 'date-time', pattern: RFC3339.source };
const INT64: JsonObject = { format: 'int64' };
const rule = (r: string, message: string): JsonObject => ({ rule: r, message });

/**
 * What zod cannot say and the API server needs, for every CRD, by file and path (convert.ts's paths):
 * CEL rules, list types, formats, defaults of fields the Go types mark both required and defaulted,
 * and limits on what zod checks with a refinement of its own.
 */
export const KUBERNETES_EXTRAS: Readonly<Record<string, Extras>> = {
  'gpufault.yaml': {
    spec: {
      'x-kubernetes-validations': [
        rule('has(self.nodeName) != has(self.nodeSelector)', FAULT_RULES.oneNodeChoice),
        rule(
          '(has(self.devices) ? 1 : 0) + (has(self.indexes) ? 1 : 0) + (has(self.count) ? 1 : 0) + (has(self.fraction) ? 1 : 0) <= 1',
          FAULT_RULES.oneGpuChoice,
        ),
        rule(
          '!has(self.start) || !has(self.repair) || self.repair > self.start',
          FAULT_RULES.repairAfterStart,
        ),
        // A changed fault would leave the GPUs of the old one in an unknown state: a new fault is a new object.
        rule('self == oldSelf', 'spec is immutable: delete the fault and create a new one'),
      ],
    },
    'spec.nodeSelector.matchLabels': { maxProperties: LIMITS.matchLabels },
    'spec.nodeSelector.matchExpressions[]': {
      'x-kubernetes-validations': [
        rule(
          "self.operator == 'In' || self.operator == 'NotIn' ? has(self.values) && size(self.values) > 0 : !has(self.values) || size(self.values) == 0",
          VALUES_RULE,
        ),
      ],
    },
    // The parser checks the prefix and the name apart (isLabelKey); the API server gets their sum.
    'spec.nodeSelector.matchExpressions[].key': { maxLength: 317, pattern: LABEL_KEY.source },
    'spec.devices': { 'x-kubernetes-list-type': 'set' },
    'spec.indexes': { 'x-kubernetes-list-type': 'set' },
    'spec.fault': {
      'x-kubernetes-validations': [
        rule("self.type == 'Xid' ? has(self.xid) : !has(self.xid)", FAULT_RULES.xid),
        rule('has(self.gpuInstanceId) == has(self.computeInstanceId)', FAULT_RULES.instancePair),
        rule("!has(self.gpuInstanceId) || self.type == 'Xid'", FAULT_RULES.instanceOnlyXid),
        rule(
          "!has(self.count) || self.type == 'EccSingleBit' || self.type == 'EccDoubleBit'",
          FAULT_RULES.eccCount,
        ),
      ],
    },
    // The parser reads times as Go does (parseTime); the API server gets the pattern.
    'spec.start': TIME,
    'spec.repair': TIME,
    'status.nodes': { maxProperties: FAULT_LIMITS.statusNodes },
    'status.writers': { maxProperties: FAULT_LIMITS.statusWriters },
    'status.nodes{}.devices[].publishedAt': { format: 'date-time' },
    'status.nodes{}.observedGeneration': INT64,
    'status.conditions': { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] },
    'status.conditions[].observedGeneration': INT64,
    'status.conditions[].lastTransitionTime': { format: 'date-time' },
  },
  'computedomain.yaml': {
    spec: { 'x-kubernetes-validations': [rule('self == oldSelf', 'A computeDomain.spec is immutable')] },
    'status.status': { default: 'NotReady' },
    'status.nodes': { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] },
  },
  'computedomainclique.yaml': {
    daemons: { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['nodeName'] },
  },
};

const column = (name: string, type: string, jsonPath: string, priority?: number): JsonObject => ({
  name,
  type,
  jsonPath,
  ...(priority === undefined ? {} : { priority }),
});

const NVIDIA_GROUP = 'resource.nvidia.com';

export const CRDS: readonly CrdSource[] = [
  {
    file: 'computedomain.yaml',
    header: `ComputeDomain, NVIDIA's CRD for a set of nodes whose GPUs share memory over multi-node NVLink
(IMEX), with the fields, defaults, enums and rule of the v1beta1 schema that NVIDIA's DRA driver
ships (kubernetes-sigs/dra-driver-nvidia-gpu, deployments/helm/dra-driver-nvidia-gpu/crds/
resource.nvidia.com_computedomains.yaml). Workloads written for NVIDIA's driver must be accepted and
refused here exactly as there, so nothing is added: no length limits, no printer columns, no short
names. Its schema is src/model/compute-domain/schema.ts.`,
    group: NVIDIA_GROUP,
    kind: 'ComputeDomain',
    plural: 'computedomains',
    scope: 'Namespaced',
    version: 'v1beta1',
    statusSubresource: true,
    schema: object(
      { spec: ComputeDomainSpec.optional(), status: ComputeDomainStatus.optional() },
      'A set of nodes prepared to run one multi-node workload whose GPUs share memory over NVLink.',
    ),
  },
  {
    file: 'computedomainclique.yaml',
    header: `ComputeDomainClique, NVIDIA's CRD for the IMEX daemons of one ComputeDomain in one NVLink clique,
written by each daemon about itself (named <ComputeDomain UID>.<cliqueID>, in the driver's
namespace), with the schema NVIDIA's DRA driver generates from its v1beta1 Go types
(kubernetes-sigs/dra-driver-nvidia-gpu, api/nvidia.com/resource/v1beta1/computedomainclique.go).
The daemons sit at the top level, not under spec or status, and there is no status subresource: a
daemon updates its own entry with a plain write. Its schema is src/model/compute-domain/schema.ts.`,
    group: NVIDIA_GROUP,
    kind: 'ComputeDomainClique',
    plural: 'computedomaincliques',
    scope: 'Namespaced',
    version: 'v1beta1',
    statusSubresource: false,
    schema: object(
      { daemons: CliqueDaemons.optional() },
      'The IMEX daemons of one ComputeDomain in one NVLink clique.',
    ),
  },
  {
    file: 'gpufault.yaml',
    header: `GpuFault: a GPU failure as NVIDIA's driver would see it through NVML (an XID, ECC errors, a lost GPU,
a GPU it cannot monitor), injected on real nodes (the node plugin) and on KWOK nodes (the fleet).
Each writer (a node's plugin, a fleet) reads the spec and records its counts under
status.writers.<writer> and some nodes' details under status.nodes.<node> (a fleet lists at most 100
of its nodes), maps so that every writer merge-patches its own entries without conflicts; the first
writer by name sums them into hits, nodesHit and unlistedNodes. Limits are on every list and string so
that the API server can bound the cost of the CEL rules. Its schema is src/model/fault/resource.ts.`,
    group: GROUP,
    kind: GPUFAULT_KIND,
    plural: 'gpufaults',
    shortNames: ['gf'],
    scope: 'Cluster',
    version: VERSION,
    statusSubresource: true,
    printerColumns: [
      column('Fault', 'string', '.spec.fault.type'),
      column('XID', 'integer', '.spec.fault.xid'),
      column('Node', 'string', '.spec.nodeName'),
      column('Selector', 'string', '.spec.nodeSelector'),
      column('Hits', 'integer', '.status.hits'),
      column('Nodes', 'integer', '.status.nodesHit'),
      column('Start', 'date', '.spec.start', 1),
      column('Repair', 'date', '.spec.repair', 1),
      column('Age', 'date', '.metadata.creationTimestamp'),
    ],
    schema: object({ spec: GpuFaultSpec, status: GpuFaultStatus.optional() }),
  },
];

/** The CustomResourceDefinition of one CRD source, as an object for YAML. */
export function crdObject(c: CrdSource): JsonObject {
  const openAPIV3Schema = jsonSchema(c.schema, 'crd', KUBERNETES_EXTRAS[c.file] ?? {}, c.file);
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${c.plural}.${c.group}` },
    spec: {
      group: c.group,
      scope: c.scope,
      names: {
        kind: c.kind,
        listKind: `${c.kind}List`,
        plural: c.plural,
        singular: c.kind.toLowerCase(),
        ...(c.shortNames ? { shortNames: c.shortNames } : {}),
      },
      versions: [
        {
          name: c.version,
          served: true,
          storage: true,
          ...(c.statusSubresource ? { subresources: { status: {} } } : {}),
          ...(c.printerColumns ? { additionalPrinterColumns: c.printerColumns } : {}),
          schema: { openAPIV3Schema },
        },
      ],
    },
  };
}
