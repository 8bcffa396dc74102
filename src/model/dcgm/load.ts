import { FakegpuError } from '../../errors.js';

/**
 * What a pod's GPUs report, chosen by the pod's annotations so an autoscaling rule can be exercised on
 * purpose: a level, a sine wave or steps over time, each in percent and timed from the pod's start.
 * Without annotations an allocated GPU is busy and a free one idle.
 */

export const UTIL_ANNOTATION = 'fakegpu.dev/gpu-util';
export const MEMORY_ANNOTATION = 'fakegpu.dev/gpu-memory';
/** The only annotations the load is read from: a pod cache keeps these and no others. */
export const LOAD_ANNOTATIONS = [UTIL_ANNOTATION, MEMORY_ANNOTATION] as const;
/**
 * Far longer than any pattern a person writes (a `steps(...)` of a hundred steps): a longer value is
 * refused, so a cache need keep no more than this of one (`keptValue`).
 */
export const MAX_PATTERN = 4096;
/** Of a bad value, a message quotes this much: a message is kept per pod and sent as an event. */
export const QUOTED = 100;

export type Pattern =
  | { kind: 'level'; percent: number }
  | { kind: 'sine'; min: number; max: number; periodS: number }
  | { kind: 'steps'; steps: readonly { atS: number; percent: number }[] };

export interface Load {
  util: Pattern;
  /** Share of the framebuffer in use, percent. */
  memory: Pattern;
}

/** A GPU no pod holds. */
export const IDLE: Load = { util: { kind: 'level', percent: 0 }, memory: { kind: 'level', percent: 0 } };
/** An allocated GPU whose pod says nothing: a training job's steady state. */
export const BUSY: Load = {
  util: { kind: 'level', percent: 100 },
  memory: { kind: 'level', percent: 80 },
};

const ALLOWED =
  'a percentage 0-100, sine(min,max,period) or steps(first,percent@time,...) with times such as 30s, 5m, 1h';

const PERCENT = /^\d{1,3}(?:\.\d+)?$/;
const DURATION = /^(\d+(?:\.\d+)?)(s|m|h)$/;
const UNIT_S = { s: 1, m: 60, h: 3600 } as const;

function percent(s: string, bad: () => FakegpuError): number {
  const t = s.trim();
  if (!PERCENT.test(t)) throw bad();
  const v = Number(t);
  if (v > 100) throw bad();
  return v;
}

function seconds(s: string, bad: () => FakegpuError): number {
  const m = DURATION.exec(s.trim());
  if (!m) throw bad();
  return Number(m[1]) * UNIT_S[m[2] as keyof typeof UNIT_S];
}

/** A value as a message quotes it: at most `QUOTED` characters of it, and how long it was if longer. */
export function quoted(value: string): string {
  if (value.length <= QUOTED) return JSON.stringify(value);
  const length = value.length > MAX_PATTERN ? `over ${MAX_PATTERN}` : String(value.length);
  return `${JSON.stringify(value.slice(0, QUOTED))}... (${length} characters)`;
}

/** What of a value a cache keeps: all of any that may parse, and just enough of a longer one to refuse it. */
export function keptValue(value: string): string {
  return value.length > MAX_PATTERN ? value.slice(0, MAX_PATTERN + 1) : value;
}

/** One annotation's value; `field` names it in the one-line error. */
export function parsePattern(value: string, field: string): Pattern {
  const bad = () => new FakegpuError(field, `${quoted(value)} is not a load pattern; expected ${ALLOWED}`);
  if (value.length > MAX_PATTERN) throw bad();
  const v = value.trim();
  const call = /^(sine|steps)\((.*)\)$/.exec(v);
  if (!call) return { kind: 'level', percent: percent(v, bad) };
  const args = (call[2] ?? '').split(',');
  if (call[1] === 'sine') {
    if (args.length !== 3) throw bad();
    const min = percent(args[0] ?? '', bad);
    const max = percent(args[1] ?? '', bad);
    const periodS = seconds(args[2] ?? '', bad);
    if (min > max || periodS <= 0) throw bad();
    return { kind: 'sine', min, max, periodS };
  }
  const steps = args.map((a, i) => {
    const [p = '', at] = a.split('@');
    if (i === 0) {
      if (at !== undefined) throw bad();
      return { atS: 0, percent: percent(p, bad) };
    }
    if (at === undefined) throw bad();
    return { atS: seconds(at, bad), percent: percent(p, bad) };
  });
  // The first step holds from the start; each later one must come after the one before it.
  if (steps.some((s, i) => i > 0 && s.atS <= (steps[i - 1]?.atS ?? 0))) throw bad();
  return { kind: 'steps', steps };
}

/** A pod's load from its annotations; what is not annotated keeps the busy default. */
export function loadOf(annotations: Readonly<Record<string, string>> | undefined, where: string): Load {
  const util = annotations?.[UTIL_ANNOTATION];
  const memory = annotations?.[MEMORY_ANNOTATION];
  return {
    util: util === undefined ? BUSY.util : parsePattern(util, `${where} annotation ${UTIL_ANNOTATION}`),
    memory:
      memory === undefined ? BUSY.memory : parsePattern(memory, `${where} annotation ${MEMORY_ANNOTATION}`),
  };
}

/** The pattern's value `elapsedS` seconds after the pod started, percent. */
export function valueAt(p: Pattern, elapsedS: number): number {
  const t = Math.max(0, elapsedS);
  switch (p.kind) {
    case 'level':
      return p.percent;
    case 'sine':
      // Starts at the middle, rising: a rule sees both edges within one period.
      return p.min + ((p.max - p.min) * (1 + Math.sin((2 * Math.PI * t) / p.periodS))) / 2;
    case 'steps': {
      let v = p.steps[0]?.percent ?? 0;
      for (const s of p.steps) if (s.atS <= t) v = s.percent;
      return v;
    }
  }
}
