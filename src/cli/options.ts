import { Option } from 'commander';
import { DEFAULT_RELEASE, RELEASES } from '../device/release.js';
import { FakegpuError, show } from '../errors.js';
import { DRIVER_NAME } from '../slice/build.js';

/** A flag that can also come from an environment variable, as in NVIDIA's chart and ours. */
export function envOption(flags: string, desc: string, env: string, dflt?: string): Option {
  const o = new Option(flags, desc).env(env);
  return dflt === undefined ? o : o.default(dflt);
}

/** An integer flag within bounds, refused with the flag, the value and the range. */
export function intFlag(text: string, flag: string, min: number, max?: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || (max !== undefined && n > max)) {
    throw new FakegpuError(
      flag,
      `${show(text)} is not an integer ${max === undefined ? `>= ${min}` : `from ${min} to ${max}`}`,
    );
  }
  return n;
}

/** The driver flags the node plugin and the fleet share, from the same environment as NVIDIA's chart. */
export function dynamicMigOption(): Option {
  return new Option('--dynamic-mig', 'publish every MIG partition (DynamicMIG)').env('FAKEGPU_DYNAMIC_MIG');
}

export function driverNameOption(): Option {
  return envOption('--driver-name <name>', 'DRA driver name', 'DRIVER_NAME', DRIVER_NAME);
}

export function driverReleaseOption(): Option {
  return envOption(
    '--dra-driver-release <release>',
    'NVIDIA DRA driver release to emulate',
    'FAKEGPU_DRA_DRIVER_RELEASE',
    DEFAULT_RELEASE,
  ).choices(Object.keys(RELEASES));
}
