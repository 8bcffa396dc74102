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
export const Provenance = z.record(z.string(), strict({ status: z.enum(FACT_STATUSES), from: z.string() }));
export type Provenance = z.infer<typeof Provenance>;

export const MachineProfile = strict({
  apiVersion: z.literal(API_VERSION, { error: () => `must be ${JSON.stringify(API_VERSION)}` }),
  kind: z.literal(KIND, { error: () => `must be ${JSON.stringify(KIND)}` }),
  metadata: strict({
    /** Kubernetes' limit for object names: the profile is an object of that shape. */
    name: nonEmpty.max(253),
    labels: z.record(z.string(), z.string()).optional(),
  }),
  spec: ProfileSpec,
  provenance: Provenance.optional(),
});
export type MachineProfile = z.infer<typeof MachineProfile>;
