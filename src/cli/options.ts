import { Option } from 'commander';
import { FakegpuError, show } from '../errors.js';

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
