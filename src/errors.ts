/**
 * Every user-facing failure names the field, the value and what is allowed, so one line on stderr is
 * enough to fix the input. The CLI prints `message` and exits non-zero; nothing reaches stdout.
 */
export class FakegpuError extends Error {
  constructor(
    /** Dotted path of the offending input, e.g. `spec.gpus[2].busId` or `--driver-version`. */
    readonly field: string,
    readonly detail: string,
  ) {
    super(`${field}: ${detail}`);
    this.name = 'FakegpuError';
  }
}

/** Quote a user value for an error message; JSON keeps strings, numbers and objects unambiguous. */
export function show(value: unknown): string {
  return value === undefined ? 'nothing' : JSON.stringify(value);
}

export function oneOf(values: readonly string[]): string {
  return values.join(', ');
}
