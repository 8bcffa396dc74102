import { z } from 'zod';
import { nonEmpty, ProfileSpec, strict } from '../preset/spec.js';

export const API_VERSION = 'fakegpu.dev/v1alpha1';
export const KIND = 'MachineProfile';

export const MachineProfile = strict({
  apiVersion: z.literal(API_VERSION, { error: () => `must be ${JSON.stringify(API_VERSION)}` }),
  kind: z.literal(KIND, { error: () => `must be ${JSON.stringify(KIND)}` }),
  metadata: strict({
    /** Kubernetes' limit for object names: the profile is an object of that shape. */
    name: nonEmpty.max(253),
    labels: z.record(z.string(), z.string()).optional(),
  }),
  spec: ProfileSpec,
});
export type MachineProfile = z.infer<typeof MachineProfile>;
