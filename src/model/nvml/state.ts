import { z } from 'zod';

/**
 * A hardware fault NVML would report, with the name of what injected it (a `GpuFault`), so clearing one
 * injection leaves the others. Kept in the state so a restarted plugin still finds a broken GPU broken.
 */
export const NvmlFaultSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    source: z.string(),
    kind: z.literal('xid'),
    xid: z.number().int().min(1),
    gpuInstanceId: z.number().int().min(0).optional(),
    computeInstanceId: z.number().int().min(0).optional(),
  }),
  z.strictObject({
    source: z.string(),
    kind: z.literal('ecc'),
    /** 1: single-bit (corrected), 2: double-bit (uncorrected). */
    bits: z.union([z.literal(1), z.literal(2)]),
    count: z.number().int().min(1),
  }),
  z.strictObject({ source: z.string(), kind: z.literal('lost') }),
  z.strictObject({ source: z.string(), kind: z.literal('unmonitored') }),
]);
export type NvmlFault = z.infer<typeof NvmlFaultSchema>;
/** A fault as the hardware has it, before it is recorded with its source. */
export type HardwareFault = NvmlFault extends infer F
  ? F extends NvmlFault
    ? Omit<F, 'source'>
    : never
  : never;

/**
 * The part of NVML that changes at run time: MIG mode, the GPU/compute instances created, and injected
 * faults. Everything else NVML reports is fixed by the machine. Keyed by GPU UUID so a state file cannot
 * be applied to the wrong board.
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
      faults: z.array(NvmlFaultSchema).optional(),
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
