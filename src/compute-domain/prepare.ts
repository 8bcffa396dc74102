/**
 * What the compute-domain kubelet plugin decides when it prepares a channel claim, in NVIDIA's order
 * and with its messages (compute-domains.md §3): one channel claim per node, the domain must exist in
 * the claim's namespace, the node may carry only this domain's label, and the node must be Ready in
 * the domain before the channel is handed out; until then the kubelet retries and the pod waits in
 * ContainerCreating. Pure: the caller reads the checkpoint, the ComputeDomain, the node and its clique.
 */

export const CHANNELS = 2048;
export const CHANNEL_DIR = '/dev/nvidia-caps-imex-channels';
/** The node label the plugin sets on prepare, which the domain's DaemonSet selects. */
export const DOMAIN_LABEL = 'resource.nvidia.com/computeDomain';

export interface ChannelClaim {
  uid: string;
  namespace: string;
  name: string;
  /** From its `ComputeDomainChannelConfig`. */
  domainID: string;
  allocationMode: string;
}

export interface ChannelPrepareInput {
  claim: ChannelClaim;
  /** The claim that holds channel 0 on this node according to the checkpoint; null: none. */
  channelHeldBy: string | null;
  /** The ComputeDomain whose UID the config names; null: not found. */
  domain: { uid: string; namespace: string } | null;
  /** The node's `resource.nvidia.com/computeDomain` label now; null: unlabelled. */
  nodeLabel: string | null;
  /** Whether the node is Ready in the domain (its clique entry, else the domain's status.nodes). */
  nodeReady: boolean;
  /** The node's NVLink clique; null: none, and the channel comes without device nodes. */
  clique: string | null;
}

export type ChannelPrepareResult =
  { ok: true; labelNode: boolean; deviceNodes: string[] } | { ok: false; retry: boolean; message: string };

export function channelDeviceNodes(allocationMode: string): string[] {
  const n = allocationMode === 'All' ? CHANNELS : 1;
  return Array.from({ length: n }, (_, i) => `${CHANNEL_DIR}/channel${i}`);
}

export function prepareChannel(i: ChannelPrepareInput): ChannelPrepareResult {
  const { claim } = i;
  if (i.channelHeldBy !== null && i.channelHeldBy !== claim.uid)
    return fail(
      claim,
      `channel 0 already allocated by claim ${i.channelHeldBy} (according to checkpoint)`,
      false,
    );
  if (!i.domain) return fail(claim, `ComputeDomain not found: ${claim.domainID}`, true);
  if (i.domain.namespace !== claim.namespace)
    return fail(
      claim,
      "the ResourceClaim's namespace is different than the ComputeDomain's namespace",
      false,
    );
  if (i.nodeLabel !== null && i.nodeLabel !== claim.domainID)
    return fail(claim, 'label already exists for a different ComputeDomain', true);
  if (!i.nodeReady)
    return fail(
      claim,
      'error applying config: error asserting ComputeDomain Ready: current node not ready in ComputeDomain',
      true,
    );
  return {
    ok: true,
    labelNode: i.nodeLabel === null,
    deviceNodes: i.clique === null ? [] : channelDeviceNodes(claim.allocationMode),
  };
}

function fail(c: ChannelClaim, why: string, retry: boolean): ChannelPrepareResult {
  return {
    ok: false,
    retry,
    message: `error preparing devices for claim '${c.namespace}/${c.name}:${c.uid}': prepare devices failed: ${why}`,
  };
}
