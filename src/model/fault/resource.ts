import { z } from 'zod';
import { clip, FakegpuError, schemaError } from '../../errors.js';
import { strict } from '../preset/machine-spec.js';
import { DNS_LABEL, DNS_SUBDOMAIN } from '../../kube/types/names.js';
import { LabelSelector } from './selector.js';

/**
 * The GpuFault custom resource (deploy/crds/gpufault.yaml) as the plugin and the fleet read it. The CRD
 * already refuses bad faults, but a cluster may carry an older or looser copy of it, and neither
 * process may crash on a custom resource: every object is parsed here again, as strictly as the CRD,
 * and a bad one is reported in one line and left alone.
 */

export const GROUP = 'fakegpu.dev';
export const VERSION = 'v1alpha1';
export const GPUFAULT_API_VERSION = `${GROUP}/${VERSION}`;
export const GPUFAULT_KIND = 'GpuFault';
export const GPUFAULTS_PATH = `/apis/${GROUP}/${VERSION}/gpufaults`;
export const GPUFAULT_CRD = `gpufaults.${GROUP}`;

export const FAULT_TYPES = ['Xid', 'EccSingleBit', 'EccDoubleBit', 'GpuLost', 'Unmonitored'] as const;
export type FaultType = (typeof FAULT_TYPES)[number];
export const TAINT_EFFECTS = ['None', 'NoSchedule', 'NoExecute'] as const;

/** The CRD's limits: it is generated from the schemas below (src/tools/schemas). */
export const FAULT_LIMITS = {
  xid: { min: 1, max: 999 },
  instanceId: { max: 255 },
  eccCount: { max: 1_000_000 },
  gpuIndex: { max: 255 },
  /** Entries of `devices` and `indexes`, and the largest `count`. */
  gpus: 256,
  seed: { max: 4_294_967_295 },
  /** Hit devices listed in one node's status entry. */
  statusDevices: 1024,
  message: 1024,
  /**
   * Node entries in a fault's status: each fleet lists at most `LISTED_NODES` of its nodes, so this many
   * leaves room for a plugin on every real node beside them.
   */
  statusNodes: 20_000,
  /** Writers with counts in a fault's status: each node plugin, and each fleet. */
  statusWriters: 20_000,
} as const;

/** How many ECC errors when `count` is not given. */
export const DEFAULT_ECC_COUNT = 1;

/** A decimal in (0, 1]: "0.01", "1". */
export const FRACTION = /^(0\.[0-9]*[1-9][0-9]*|1(\.0+)?)$/;
/** RFC 3339 with a zone, as the CRD's pattern: a time without one would be read in each process's own. */
export const RFC3339 =
  /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$/;

/**
 * Milliseconds since the epoch of an RFC 3339 time, or null. Fields are checked as Go's time.Parse
 * checks them (the API server's): JavaScript's Date would take February 30 as March 2.
 */
export function parseTime(text: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|([+-])(\d{2}):(\d{2}))$/.exec(text);
  if (!m || !RFC3339.test(text)) return null;
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const utc = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  if (utc.getUTCMonth() !== mo - 1 || utc.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) return null;
  const offH = Number(m[10] ?? 0);
  const offM = Number(m[11] ?? 0);
  if (offH > 23 || offM > 59) return null;
  const offset = (m[9] === '-' ? -1 : 1) * (offH * 60 + offM) * 60_000;
  const fraction = m[7] ? Math.floor(Number(`0${m[7]}`) * 1000) : 0;
  return utc.getTime() + fraction - offset;
}

const Time = z
  .string()
  .max(64)
  .refine((t) => parseTime(t) !== null, 'must be an RFC 3339 time with a zone, e.g. "2026-01-02T15:04:05Z"');

const Index = z.number().int().min(0).max(FAULT_LIMITS.gpuIndex.max);
const InstanceId = z.number().int().min(0).max(FAULT_LIMITS.instanceId.max);

/**
 * The messages of the CRD's CEL rules, which the parser gives for the same faults: the generated CRD
 * (src/tools/schemas) pairs each with its rule.
 */
export const FAULT_RULES = {
  xid: 'xid is required with type Xid and allowed only with it',
  instancePair: 'give both gpuInstanceId and computeInstanceId, or neither',
  instanceOnlyXid: 'gpuInstanceId and computeInstanceId are allowed only with type Xid',
  eccCount: 'count is allowed only with types EccSingleBit and EccDoubleBit',
  oneNodeChoice: 'give exactly one of nodeName and nodeSelector',
  oneGpuChoice: 'give at most one of devices, indexes, count and fraction',
  repairAfterStart: 'repair must be after start',
} as const;

function unique(list: readonly unknown[]): boolean {
  return new Set(list).size === list.length;
}

export const FaultSpec = strict({
  type: z.enum(FAULT_TYPES),
  xid: z.number().int().min(FAULT_LIMITS.xid.min).max(FAULT_LIMITS.xid.max).optional(),
  gpuInstanceId: InstanceId.optional().describe(
    'With computeInstanceId, the static MIG device of each GPU the XID is on.',
  ),
  computeInstanceId: InstanceId.optional(),
  count: z
    .number()
    .int()
    .min(1)
    .max(FAULT_LIMITS.eccCount.max)
    .optional()
    .describe('How many ECC errors (default 1).'),
}).superRefine((f, ctx) => {
  // The CRD's CEL rules.
  if ((f.type === 'Xid') !== (f.xid !== undefined))
    ctx.addIssue({
      code: 'custom',
      path: ['xid'],
      message: FAULT_RULES.xid,
    });
  if ((f.gpuInstanceId === undefined) !== (f.computeInstanceId === undefined))
    ctx.addIssue({
      code: 'custom',
      path: [f.gpuInstanceId === undefined ? 'gpuInstanceId' : 'computeInstanceId'],
      message: FAULT_RULES.instancePair,
    });
  if (f.gpuInstanceId !== undefined && f.type !== 'Xid')
    ctx.addIssue({
      code: 'custom',
      path: ['gpuInstanceId'],
      message: FAULT_RULES.instanceOnlyXid,
    });
  if (f.count !== undefined && f.type !== 'EccSingleBit' && f.type !== 'EccDoubleBit')
    ctx.addIssue({
      code: 'custom',
      path: ['count'],
      message: FAULT_RULES.eccCount,
    });
});
export type FaultSpec = z.infer<typeof FaultSpec>;

export const GpuFaultSpec = strict({
  nodeName: z
    .string()
    .max(253)
    .regex(DNS_SUBDOMAIN, 'must be a node name: lower-case letters, digits, "-" and "."')
    .optional()
    .describe('The one node of the fault.'),
  nodeSelector: LabelSelector.optional().describe(
    'The nodes of the fault, by their labels (a metav1.LabelSelector).',
  ),
  devices: z
    .array(
      z.string().max(63).regex(DNS_LABEL, 'must be a device name such as "gpu-3" or "gpu-0-mig-1g10gb-19-6"'),
    )
    .min(1)
    .max(FAULT_LIMITS.gpus)
    .refine(unique, 'names a device twice')
    .optional()
    .describe(
      'Published device names on each node (gpu-3, or a static MIG device such as gpu-0-mig-1g10gb-19-6).',
    ),
  indexes: z
    .array(Index)
    .min(1)
    .max(FAULT_LIMITS.gpus)
    .refine(unique, 'names an index twice')
    .optional()
    .describe('GPU indexes on each node.'),
  count: z
    .number()
    .int()
    .min(1)
    .max(FAULT_LIMITS.gpus)
    .optional()
    .describe('This many GPUs of each node, those of the lowest hash of (seed, node, GPU UUID).'),
  fraction: z
    .string()
    .max(16)
    .regex(FRACTION, 'must be a decimal in (0, 1], e.g. "0.01"')
    .optional()
    .describe(
      'Each GPU is hit on its own when the hash of (seed, node, GPU UUID) is below this decimal in (0, 1], e.g. "0.01".',
    ),
  seed: z.number().int().min(0).max(FAULT_LIMITS.seed.max).default(0),
  fault: FaultSpec,
  start: Time.optional().describe('When the fault begins; absent, at once.'),
  repair: Time.optional().describe('When the hardware is repaired; absent, never.'),
}).superRefine((s, ctx) => {
  if ((s.nodeName === undefined) === (s.nodeSelector === undefined))
    ctx.addIssue({ code: 'custom', path: [], message: FAULT_RULES.oneNodeChoice });
  const choices = [s.devices, s.indexes, s.count, s.fraction].filter((c) => c !== undefined);
  if (choices.length > 1)
    ctx.addIssue({
      code: 'custom',
      path: [],
      message: FAULT_RULES.oneGpuChoice,
    });
  if (s.start !== undefined && s.repair !== undefined) {
    const start = parseTime(s.start);
    const repair = parseTime(s.repair);
    if (start !== null && repair !== null && repair <= start)
      ctx.addIssue({ code: 'custom', path: ['repair'], message: FAULT_RULES.repairAfterStart });
  }
});
/** A spec as read: `seed` defaulted. */
export type GpuFaultSpec = z.infer<typeof GpuFaultSpec>;
/** A spec as written: `seed` may be left out. */
export type GpuFaultSpecInput = z.input<typeof GpuFaultSpec>;

// The status is written only by fakegpu's own processes, within these limits; they are the CRD's, so
// that the API server can bound the cost of its rules.
export const Taint = z.object({
  key: z.string().max(317),
  value: z.string().max(63).optional(),
  effect: z.enum(TAINT_EFFECTS),
});
export type Taint = z.infer<typeof Taint>;

export const DeviceFaultStatus = z.object({
  name: z.string().max(63),
  taint: Taint.optional(),
  removed: z
    .boolean()
    .optional()
    .describe("The device left the slice instead of being tainted (NVIDIA's 25.12 driver)."),
  publishedAt: z.string().max(64),
});
export type DeviceFaultStatus = z.infer<typeof DeviceFaultStatus>;

export const NodeFaultStatus = z.object({
  devices: z.array(DeviceFaultStatus).max(FAULT_LIMITS.statusDevices),
  unlisted: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("Devices hit but left out of the list, to keep the object within the API server's size limit."),
  /** E.g. the devices the fault names that this node does not have. */
  message: z.string().max(FAULT_LIMITS.message).optional(),
  observedGeneration: z.number().int().min(0),
});
export type NodeFaultStatus = z.infer<typeof NodeFaultStatus>;

/** A metav1.Condition's type: a qualified name, `[prefix/]name`. */
const CONDITION_TYPE =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/;

/** A metav1.Condition, with the rules of its Go type. */
export const Condition = z.object({
  type: z.string().max(316).regex(CONDITION_TYPE),
  status: z.enum(['True', 'False', 'Unknown']),
  observedGeneration: z.number().int().min(0).optional(),
  lastTransitionTime: z.string().max(64),
  reason: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
  message: z.string().max(32768),
});
export type Condition = z.infer<typeof Condition>;

/** What one writer (a node's plugin, or a fleet for all its nodes) found the fault hit. */
export const WriterFaultStatus = z.object({
  nodes: z.number().int().min(0).describe('Nodes where the fault hit a device.'),
  devices: z.number().int().min(0).describe('Devices hit on them.'),
  unlistedNodes: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('Of those nodes, how many have no entry under nodes (a fleet lists the first 100 by name).'),
});
export type WriterFaultStatus = z.infer<typeof WriterFaultStatus>;

export const GpuFaultStatus = z.object({
  nodes: z
    .record(z.string(), NodeFaultStatus)
    .optional()
    .describe(
      "What the writers did on some nodes, by node name: a plugin's own node, a fleet's first 100 by name.",
    ),
  writers: z
    .record(z.string(), WriterFaultStatus)
    .optional()
    .describe(
      'What each writer found, counted over all its nodes: a plugin by its node name, a fleet as "fleet:<selection>". Each writer patches only its own.',
    ),
  hits: z.number().int().min(0).optional().describe('Devices hit on all nodes together.'),
  nodesHit: z.number().int().min(0).optional().describe('Nodes hit, all together.'),
  unlistedNodes: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('Of the nodes hit, how many have no entry under nodes.'),
  conditions: z.array(Condition).max(8).optional(),
});
export type GpuFaultStatus = z.infer<typeof GpuFaultStatus>;

const GpuFaultObject = z.object({
  // List items of custom resources carry these; a missing one is no reason to refuse the object.
  apiVersion: z.literal(GPUFAULT_API_VERSION).optional(),
  kind: z.literal(GPUFAULT_KIND).optional(),
  metadata: z.object({
    name: z.string().min(1),
    uid: z.string().optional(),
    generation: z.number().int().optional(),
    resourceVersion: z.string().optional(),
    creationTimestamp: z.string().optional(),
  }),
  spec: GpuFaultSpec,
  // Written only by our own processes: one they cannot read is taken as none rather than failing the
  // fault, which each writer then repairs with its own entry.
  status: GpuFaultStatus.optional().catch(undefined),
});
export type GpuFault = z.infer<typeof GpuFaultObject>;

/** A fault to create: a name or a prefix for the API server to complete. */
export interface NewGpuFault {
  apiVersion: typeof GPUFAULT_API_VERSION;
  kind: typeof GPUFAULT_KIND;
  metadata: { name: string } | { generateName: string };
  spec: GpuFaultSpecInput;
}

/** The name of an object that may not parse, for messages. */
export function nameOf(obj: unknown): string {
  const name = (obj as { metadata?: { name?: unknown } } | null)?.metadata?.name;
  return typeof name === 'string' && name !== '' ? clip(name) : '(no name)';
}

/** A GpuFault, or why not in one line naming the field (`spec.fault.xid: ...`). */
export function checkGpuFault(obj: unknown): { fault: GpuFault } | { field: string; detail: string } {
  const parsed = GpuFaultObject.safeParse(obj);
  if (parsed.success) return { fault: parsed.data };
  const e = schemaError(parsed.error, obj, '', 'object');
  return { field: e.field, detail: e.detail };
}

/**
 * A GpuFault from what the API server sent, or a FakegpuError of one line:
 * `GpuFault <name>: spec.fault.xid: ...`.
 */
export function parseGpuFault(obj: unknown): GpuFault {
  const r = checkGpuFault(obj);
  if ('fault' in r) return r.fault;
  throw new FakegpuError(`GpuFault ${nameOf(obj)}: ${r.field}`, r.detail);
}

export type FaultPhase = 'pending' | 'active' | 'repaired';

/**
 * Where a fault stands at `now`: pending before `start`, repaired from `repair` on, active between (from
 * its creation when there is no `start`); `nextChangeAt` is when that changes, for a timer.
 */
export function faultPhase(f: GpuFault, now: Date): { phase: FaultPhase; nextChangeAt: Date | null } {
  const t = now.getTime();
  const start = f.spec.start === undefined ? null : parseTime(f.spec.start);
  const repair = f.spec.repair === undefined ? null : parseTime(f.spec.repair);
  if (repair !== null && t >= repair) return { phase: 'repaired', nextChangeAt: null };
  if (start !== null && t < start) return { phase: 'pending', nextChangeAt: new Date(start) };
  return { phase: 'active', nextChangeAt: repair === null ? null : new Date(repair) };
}
