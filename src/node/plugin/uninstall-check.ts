import type { Meta } from '../../kube/api.js';
import { KWOK_ANNOTATION } from '../../kube/kwok.js';
import type { ListedClaim } from '../../kube/types/claim.js';

/**
 * Whether the node plugin may be uninstalled (`fakegpu uninstall-check`, the chart's pre-delete Job).
 * The kubelet unprepares a claim only through its driver's registered plugin (its DRA manager returns
 * the lookup's error for a driver that is not registered), so a pod that still holds a device a plugin
 * prepared could never finish terminating once the plugin is gone. KWOK nodes have no kubelet: their
 * pods stop without a plugin (the fleet, not a plugin, publishes their devices).
 */

/** A claim allocated on plugin nodes under one of the checked drivers, and still reserved. */
export interface HeldClaim {
  namespace: string;
  name: string;
  /** The checked drivers among its results, in the order the check was given them. */
  drivers: string[];
  /** The plugin nodes its devices are on. */
  nodes: string[];
  /** Its consumers as `namespace/pod` (other kinds: `namespace/name (resource)`). */
  holders: string[];
}

/** How many holders the refusal names; the rest are counted. */
export const SHOWN_HOLDERS = 5;

/** The nodes whose devices a kubelet plugin prepares: every node but KWOK's. */
export function pluginNodes(nodes: readonly Meta[]): Set<string> {
  const out = new Set<string>();
  for (const n of nodes) {
    const name = n.metadata?.name;
    if (name && n.metadata?.annotations?.[KWOK_ANNOTATION] === undefined) out.add(name);
  }
  return out;
}

/**
 * The claims that hold a device of `drivers` on one of `plugin`'s nodes (a result's pool is its node, as
 * every driver of the plugin names its pools) and are reserved for a consumer.
 */
export function heldClaims(
  claims: readonly ListedClaim[],
  plugin: ReadonlySet<string>,
  drivers: readonly string[],
): HeldClaim[] {
  const out: HeldClaim[] = [];
  for (const c of claims) {
    const reserved = c.status?.reservedFor ?? [];
    if (reserved.length === 0) continue;
    const results = (c.status?.allocation?.devices?.results ?? []).filter(
      (r) => r.driver !== undefined && drivers.includes(r.driver) && plugin.has(r.pool ?? ''),
    );
    if (results.length === 0) continue;
    const namespace = c.metadata?.namespace ?? '';
    out.push({
      namespace,
      name: c.metadata?.name ?? '',
      drivers: drivers.filter((d) => results.some((r) => r.driver === d)),
      nodes: [...new Set(results.map((r) => r.pool ?? ''))].sort(),
      holders: reserved.map((r) =>
        r.resource === 'pods' && !r.apiGroup
          ? `${namespace}/${r.name ?? ''}`
          : `${namespace}/${r.name ?? ''} (${r.resource ?? ''})`,
      ),
    });
  }
  return out;
}

/** What the check prints when nothing holds a device: the uninstall may go on. */
export function allClear(drivers: readonly string[]): string {
  return `no pod holds a device of ${drivers.join(', ')} on a plugin node`;
}

/** The refusal's text (after `<field>: `), one line: who holds what, and what to do. */
export function refusal(held: readonly HeldClaim[], drivers: readonly string[]): string {
  const holders = [...new Set(held.flatMap((c) => c.holders))].sort();
  const nodes = new Set(held.flatMap((c) => c.nodes));
  const used = drivers.filter((d) => held.some((c) => c.drivers.includes(d)));
  const shown = holders.slice(0, SHOWN_HOLDERS).join(', ');
  const rest = holders.length - SHOWN_HOLDERS;
  const one = holders.length === 1;
  return (
    `${holders.length} ${one ? 'pod holds' : 'pods hold'} devices of ${used.join(', ')} on ` +
    `${nodes.size} plugin ${nodes.size === 1 ? 'node' : 'nodes'}: ${shown}${rest > 0 ? ` and ${rest} more` : ''}; ` +
    `delete ${one ? 'it' : 'them'} (and whatever would recreate ${one ? 'it' : 'them'}) first: without the ` +
    `node plugin the kubelet cannot unprepare ${one ? 'its' : 'their'} devices, and ${one ? 'it' : 'they'} ` +
    'would never finish terminating'
  );
}
