import { z } from 'zod';
import { FakegpuError, schemaError } from '../../errors.js';

/**
 * The parts of the benches' JSON results (`bench/results/`) that the charts read. Each bench writes more;
 * only what is plotted is checked, so a result from an older run still plots while these fields hold.
 */

const seconds = z.number().nonnegative();
const Percentiles = z.object({ p50: seconds, p90: seconds, p99: seconds });

export const FleetResult = z.object({
  bench: z.literal('fleet'),
  started: z.string(),
  hardware: z.string(),
  config: z.object({ nodes: z.number().int().positive(), profile: z.string(), dynamicMig: z.boolean() }),
  rounds: z.object({
    ceilings: z.array(seconds).min(1),
    fleets: z.array(z.object({ s: seconds })).min(1),
    idleKiB: z.array(z.number()).min(1),
    servingKiB: z.array(z.number()).min(1),
  }),
});
export type FleetResult = z.infer<typeof FleetResult>;

const Part = z.object({ pods: z.number().int(), podsPerS: z.number(), startup: Percentiles });
const SchedPhase = z.object({ work: z.object({ fill: Part, churn: Part.nullable() }) });
export const SchedResult = z.object({
  bench: z.literal('sched'),
  startedAt: z.string(),
  hardware: z.string(),
  nodes: z.number().int().positive(),
  profile: z.string(),
  variant: z.string(),
  phases: z.object({ faithful: SchedPhase, generic: SchedPhase.nullable() }),
});
export type SchedResult = z.infer<typeof SchedResult>;

export const FaultsResult = z.object({
  bench: z.literal('faults'),
  started: z.string(),
  hardware: z.string(),
  config: z.object({ nodes: z.number().int().positive(), fraction: z.number() }),
  hits: z.number().int(),
  rounds: z.array(z.object({ ceilingS: seconds, fleetS: seconds })).min(1),
});
export type FaultsResult = z.infer<typeof FaultsResult>;

export interface Results {
  fleet: FleetResult[];
  sched: SchedResult[];
  faults: FaultsResult[];
}

/** Sorts committed results by bench; one that is not a charted bench's, or lacks a field, is named in one line. */
export function sortResults(files: readonly { file: string; json: unknown }[]): Results {
  const out: Results = { fleet: [], sched: [], faults: [] };
  for (const { file, json } of files) {
    const checked = <T extends z.ZodType>(schema: T): z.infer<T> => {
      const r = schema.safeParse(json);
      if (!r.success) throw new FakegpuError(file, schemaError(r.error, json, '', 'result').message);
      return r.data;
    };
    const bench = (json as { bench?: unknown } | null)?.bench;
    if (bench === 'fleet') out.fleet.push(checked(FleetResult));
    else if (bench === 'sched') out.sched.push(checked(SchedResult));
    else if (bench === 'faults') out.faults.push(checked(FaultsResult));
    else
      throw new FakegpuError(
        file,
        `bench is ${JSON.stringify(bench)}; the charts read fleet, sched and faults results`,
      );
  }
  return out;
}
