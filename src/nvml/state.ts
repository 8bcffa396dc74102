import { z } from 'zod';

/**
 * The part of NVML that changes at run time: MIG mode and the GPU/compute instances created. Everything
 * else NVML reports is fixed by the machine. Keyed by GPU UUID so a state file cannot be applied to the
 * wrong board.
 */
export const MigStateSchema = z.strictObject({
  version: z.literal(1),
  gpus: z.record(
    z.string(),
    z.strictObject({
      migMode: z.union([z.literal(0), z.literal(1)]),
      gpuInstances: z.array(
        z.strictObject({
          id: z.number().int().min(0),
          profileId: z.number().int().min(0),
          start: z.number().int().min(0),
          computeInstances: z.array(
            z.strictObject({ id: z.number().int().min(0), profileId: z.number().int().min(0) }),
          ),
        }),
      ),
    }),
  ),
});
export type MigState = z.infer<typeof MigStateSchema>;
export type GpuMigState = MigState['gpus'][string];

export interface MigStateStore {
  load(): MigState | null;
  save(state: MigState): void;
}

/** For rendering and tests: state lives as long as the process. */
export class MemoryMigStateStore implements MigStateStore {
  private state: MigState | null;
  constructor(initial: MigState | null = null) {
    this.state = initial === null ? null : structuredClone(initial);
  }
  load(): MigState | null {
    return this.state === null ? null : structuredClone(this.state);
  }
  save(state: MigState): void {
    this.state = structuredClone(state);
  }
}
