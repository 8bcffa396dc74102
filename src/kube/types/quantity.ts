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

export const MiB = 1024n * 1024n;

export function mibQuantity(mib: number): string {
  return binaryQuantity(BigInt(mib) * MiB);
}
