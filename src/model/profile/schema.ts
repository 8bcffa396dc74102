import { z } from 'zod';
import { nonEmpty, ProfileSpec, strict } from '../preset/machine-spec.js';

export const API_VERSION = 'fakegpu.dev/v1alpha1';
export const KIND = 'MachineProfile';

/** docs/fidelity.md's vocabulary: read from real output, computed by the real stack's rule, or guessed. */
export const FACT_STATUSES = ['confirmed', 'derived', 'inferred'] as const;

/**
 * What a profile's facts rest on, per group of facts: `fakegpu capture node` writes it, naming the input
 * that showed each.
 */
export const Provenance = z.record(
  z.string(),
  strict({
    status: z
      .enum(FACT_STATUSES)
      .describe(
        "confirmed: read from the node; derived: computed by the real stack's rule; inferred: guessed.",
      ),
    from: z.string().describe('The input that showed it, e.g. `nvidia-smi -q -x`, or how it was derived.'),
  }),
);
export type Provenance = z.infer<typeof Provenance>;

export const MachineProfile = strict({
  apiVersion: z
    .literal(API_VERSION, { error: () => `must be ${JSON.stringify(API_VERSION)}` })
    .describe('The API version of MachineProfile.'),
  kind: z
    .literal(KIND, { error: () => `must be ${JSON.stringify(KIND)}` })
    .describe('Always MachineProfile.'),
  metadata: strict({
    /** Kubernetes' limit for object names: the profile is an object of that shape. */
    name: nonEmpty
      .max(253)
      .describe("The profile's name, as `fakegpu validate` and `fakegpu profiles` show it."),
    labels: z.record(z.string(), z.string()).optional().describe('Labels, as on any object. Default: none.'),
  }).describe('Name and labels.'),
  spec: ProfileSpec.describe('The machine: a preset, what changes of it, or the whole machine.'),
  provenance: Provenance.optional().describe(
    "What the profile's facts rest on, per group of facts (`gpus`, `busIds`, `pcieRoots`, `numa`, `nics`, `driver`, `mig`, `uuids`, `fabric`): `fakegpu capture node` writes it. Default: none.",
  ),
});
export type MachineProfile = z.infer<typeof MachineProfile>;
