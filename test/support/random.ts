/** mulberry32: a seeded generator, so that a failing chaos run can be repeated with its --seed. */
export function seeded(seed: number): { random: () => number; pick: <T>(xs: readonly T[]) => T } {
  let s = seed >>> 0;
  const random = (): number => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { random, pick: <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T };
}
