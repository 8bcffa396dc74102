import { createHash } from 'node:crypto';

/** RFC 4122's DNS namespace, Go's `uuid.NameSpaceDNS`. */
export const NAMESPACE_DNS = '6ba7b810-9dad-11d1-80b4-00c04fd430c8';

/**
 * RFC 4122 name-based UUID, version 5 (SHA-1), as Go's `uuid.NewSHA1(space, name)`: NVIDIA names VFIO
 * devices by one of the PCI address, so the same slot gives the same UUID on every node and restart.
 */
export function uuidV5(name: string, namespace: string = NAMESPACE_DNS): string {
  const ns = Buffer.from(namespace.replaceAll('-', ''), 'hex');
  const h = createHash('sha1').update(ns).update(name, 'utf8').digest().subarray(0, 16);
  h[6] = ((h[6] ?? 0) & 0x0f) | 0x50;
  h[8] = ((h[8] ?? 0) & 0x3f) | 0x80;
  const x = h.toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}
