const BINARY_SUFFIXES = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'] as const;

/**
 * The canonical string the API server stores for an integer quantity created with BinarySI format
 * (what Go's `resource.NewQuantity(n, resource.BinarySI).String()` prints). Values in (-1024, 1024)
 * print as plain decimals; otherwise the largest power of 1024 that divides the value is used.
 */
export function binaryQuantity(value: number | bigint): string {
  let n = BigInt(value);
  if (n > -1024n && n < 1024n) return n.toString();
  let exp = 0;
  while (exp < BINARY_SUFFIXES.length - 1 && n % 1024n === 0n) {
    n /= 1024n;
    exp++;
  }
  return `${n.toString()}${BINARY_SUFFIXES[exp] ?? ''}`;
}

/** The bytes of a quantity `binaryQuantity` wrote (an integer and a binary suffix); null for any other. */
export function binaryQuantityValue(text: string): bigint | null {
  const m = /^([0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei)?$/.exec(text);
  if (!m?.[1]) return null;
  return (
    BigInt(m[1]) * 1024n ** BigInt(BINARY_SUFFIXES.indexOf((m[2] ?? '') as (typeof BINARY_SUFFIXES)[number]))
  );
}

const DECIMAL_SUFFIXES = ['', 'k', 'M', 'G', 'T', 'P', 'E'] as const;

/** Go's `resource.NewQuantity(n, resource.DecimalSI).String()`: 4 is `4`, 1000 is `1k`. */
export function decimalQuantity(n: bigint): string {
  let v = n;
  let exp = 0;
  while (exp < DECIMAL_SUFFIXES.length - 1 && v !== 0n && v % 1000n === 0n) {
    v /= 1000n;
    exp++;
  }
  return `${v.toString()}${DECIMAL_SUFFIXES[exp] ?? ''}`;
}

export const MiB = 1024n * 1024n;

export function mibQuantity(mib: number): string {
  return binaryQuantity(BigInt(mib) * MiB);
}
