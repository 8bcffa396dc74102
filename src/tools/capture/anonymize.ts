import { createHash } from 'node:crypto';
import { FakegpuError } from '../../errors.js';
import type { FabricSpec, NicEntry } from '../../model/preset/machine-spec.js';

/**
 * What `capture node --anonymize` changes in a profile, so it can be shared without naming the machine
 * or its network: every value that identifies them is replaced by one that plays the same part in the
 * slices. GPU UUIDs are left out (each node derives its own from its name and bus ID, see node.ts).
 *   - MACs are left out too, and each node derives a locally administered one from its name and bus ID
 *     (the default without a capture): unique per node and NIC, so a pool of nodes does not repeat one
 *     MAC, which a kept or mapped address would. A MAC's last bytes cannot be hashed safely: an
 *     address space of 2^24 per vendor is searched in seconds.
 *   - IPv4 addresses become addresses of the documentation ranges (RFC 5737), distinct where the
 *     originals were, in bus order, with their prefix lengths; addresses are counted, never hashed.
 *   - The NVLink fabric's cluster UUID becomes a UUID hashed from it: a 128-bit random value cannot be
 *     searched back, and nodes of one rack captured apart still share a cluster, as IMEX needs.
 * The profile never carries GPU serials, nvidia-smi's process list, IPv6 addresses or the default
 * gateway: the capture reads none of them (test/tools/capture.test.ts greps the output for each).
 */

/** RFC 5737's TEST-NET-1, -2 and -3, hosts .1 to .254 of each. */
const DOC_NETS = ['192.0.2', '198.51.100', '203.0.113'];
const HOSTS_PER_NET = 254;
const DOC_ADDRESSES = DOC_NETS.length * HOSTS_PER_NET;

function docAddress(n: number): string {
  return `${DOC_NETS[Math.floor(n / HOSTS_PER_NET)] ?? ''}.${(n % HOSTS_PER_NET) + 1}`;
}

/** NICs without their MACs, their IPv4 addresses replaced; the prefix length of each is kept. */
export function anonymizeNics(entries: readonly NicEntry[]): NicEntry[] {
  const mapped = new Map<string, string>();
  return entries.map(({ mac: _mac, ...e }) => {
    if (e.ipv4 === undefined) return e;
    const [address = '', prefix = '32'] = e.ipv4.split('/');
    let fake = mapped.get(address);
    if (fake === undefined) {
      if (mapped.size >= DOC_ADDRESSES)
        throw new FakegpuError(
          '--anonymize',
          `the NICs have more than ${DOC_ADDRESSES} distinct IPv4 addresses, the number the documentation ranges hold`,
        );
      fake = docAddress(mapped.size);
      mapped.set(address, fake);
    }
    return { ...e, ipv4: `${fake}/${prefix}` };
  });
}

/** A lower-case UUID (version 4 and variant bits set) hashed from the real cluster UUID. */
export function anonymizeFabric(fabric: FabricSpec): FabricSpec {
  if (fabric.clusterUuid === undefined) return fabric;
  const h = createHash('sha256').update(`fakegpu anonymized fabric\0${fabric.clusterUuid}`).digest();
  h[6] = ((h[6] ?? 0) & 0x0f) | 0x40;
  h[8] = ((h[8] ?? 0) & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return {
    ...fabric,
    clusterUuid: `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`,
  };
}
