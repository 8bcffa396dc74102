/**
 * What the compute-domain kubelet plugin decides when it prepares a channel claim, in NVIDIA's order
 * and with its messages (compute-domains.md §3): one channel claim per node, the domain must exist in
 * the claim's namespace, the node may carry only this domain's label, and the node must be Ready in
 * the domain before the channel is handed out; until then the kubelet retries and the pod waits in
 * ContainerCreating. Pure: the caller reads the checkpoint, the ComputeDomain, the node and its clique.
 */

import { claimString } from '../../kube/types/claim.js';

export const CHANNELS = 2048;
export const CHANNEL_DIR = '/dev/nvidia-caps-imex-channels';

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

export type ChannelPrepareResult = { ok: true; labelNode: boolean; deviceNodes: string[] } | ChannelFailure;

export function channelDeviceNodes(allocationMode: string): string[] {
  const n = allocationMode === 'All' ? CHANNELS : 1;
  return Array.from({ length: n }, (_, i) => `${CHANNEL_DIR}/channel${i}`);
}

/** Steps 1–3 (checkpoint, domain, namespace, label); whether to label the node comes with a pass. */
export function checkChannel(
  i: Omit<ChannelPrepareInput, 'nodeReady' | 'clique'>,
): { ok: true; labelNode: boolean } | ChannelFailure {
  const { claim } = i;
  if (i.channelHeldBy !== null && i.channelHeldBy !== claim.uid)
    return fail(claim, channelHeldMessage(i.channelHeldBy), false);
  if (!i.domain) return fail(claim, `ComputeDomain not found: ${claim.domainID}`, true);
  if (i.domain.namespace !== claim.namespace)
    return fail(
      claim,
      "the ResourceClaim's namespace is different than the ComputeDomain's namespace",
      false,
    );
  if (i.nodeLabel !== null && i.nodeLabel !== claim.domainID)
    return fail(claim, 'label already exists for a different ComputeDomain', true);
  return { ok: true, labelNode: i.nodeLabel === null };
}

export function channelHeldMessage(holder: string): string {
  return `channel 0 already allocated by claim ${holder} (according to checkpoint)`;
}

/** Step 4: the node is not (yet) Ready in the domain; the pod waits. */
export function notReady(claim: ChannelClaim): ChannelFailure {
  return fail(
    claim,
    'error applying config: error asserting ComputeDomain Ready: current node not ready in ComputeDomain',
    true,
  );
}

/** All four steps, and the channel's device nodes: what one prepare call decides. */
export function prepareChannel(i: ChannelPrepareInput): ChannelPrepareResult {
  const checked = checkChannel(i);
  if (!checked.ok) return checked;
  if (!i.nodeReady) return notReady(i.claim);
  return {
    ok: true,
    labelNode: checked.labelNode,
    deviceNodes: i.clique === null ? [] : channelDeviceNodes(i.claim.allocationMode),
  };
}

export type ChannelFailure = { ok: false; retry: boolean; message: string };

/** NVIDIA's wording around the cause, quotes included. */
export function prepareFailure(c: { namespace: string; name: string; uid: string }, why: string): string {
  return `error preparing devices for claim '${claimString(c)}': prepare devices failed: ${why}`;
}

function fail(c: ChannelClaim, why: string, retry: boolean): ChannelFailure {
  return { ok: false, retry, message: prepareFailure(c, why) };
}
