import type { NicHardware } from '../hardware/machine.js';
import { nicMac } from '../hardware/identity.js';
import type { ResourceClaim } from '../../kube/types/claim.js';
import { decodeNicConfig, type NicInterfaceConfig } from './config.js';
import { parseMac } from './netip.js';

/**
 * A NIC claim's `status.devices` (KEP-4817) as DRANET writes them once the pod's sandbox exists (DRANET
 * v1.4.0 and f258477c pkg/driver/nri_hooks.go `runPodSandbox`, pkg/driver/hostdevice.go
 * `nsAttachNetdev`, pkg/driver/dra_hooks.go): one server-side apply of the claim's status per claim,
 * one entry per device of the driver. Field order is that of client-go's apply configurations, so the
 * request body reads as DRANET's. NVIDIA's GPU plugin writes no claim status (v0.5.0), so GPU claims get
 * none.
 */

export interface Condition {
  type: string;
  status: 'True';
  lastTransitionTime: string;
  reason: string;
}

export interface NetworkDeviceData {
  interfaceName: string;
  ips?: string[];
  hardwareAddress: string;
}

export interface AllocatedDeviceStatus {
  driver: string;
  pool: string;
  device: string;
  conditions: Condition[];
  networkData?: NetworkDeviceData;
}

/** The apply configuration DRANET sends: `ResourceClaim(name, namespace).WithStatus(...)`. */
export interface ClaimStatusApply {
  kind: 'ResourceClaim';
  apiVersion: 'resource.k8s.io/v1';
  metadata: { name: string; namespace: string };
  status: { devices: AllocatedDeviceStatus[] };
}

/** A NIC as the status reads it: the host's interface, its MAC and its global addresses. */
export interface NicLink {
  ifName: string | null;
  rdmaDevice: string | null;
  mac: string | null;
  /** The host interface's global-scope addresses, CIDR form. */
  ips: string[];
}

/**
 * The NIC as it is on `node`: a MAC the profile did not fix was derived from the machine's node name
 * (`nicMac`), and is derived again for `node`, as the fleet's slices do; the addresses are the
 * profile's `ipv4`, which the slice publishes as `dra.net/ipv4`, or none.
 */
export function nicLink(nic: NicHardware, machineNode: string, node: string): NicLink {
  const derived = nic.mac !== null && nic.mac === nicMac(machineNode, nic.busId);
  return {
    ifName: nic.ifName,
    rdmaDevice: nic.rdmaDevice,
    mac: derived ? nicMac(node, nic.busId) : nic.mac,
    ips: nic.ipv4 === null ? [] : [nic.ipv4],
  };
}

/** Go's `metav1.Now()` as it serialises: RFC 3339, whole seconds, UTC. */
export function rfc3339(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`;
}

const ready = (reason: string, type: string, now: string): Condition => ({
  type,
  status: 'True',
  lastTransitionTime: now,
  reason,
});

/**
 * One device's entry. The RDMA subsystem is taken to be in the kernel's default `shared` netns mode
 * (DRANET pkg/driver/driver.go), where no RDMA link is moved and so no `RDMALinkReady` is written.
 */
export function deviceStatus(
  at: { driver: string; pool: string; device: string },
  link: NicLink,
  config: NicInterfaceConfig,
  now: string,
): AllocatedDeviceStatus {
  const s: AllocatedDeviceStatus = { ...at, conditions: [] };
  if (link.ifName !== null) {
    // The addresses: the config's, else (no DHCP asked) the host interface's global ones. With DHCP
    // DRANET asks a server on the host interface; with none to ask we hand out the host's addresses.
    const ips = config.addresses && config.addresses.length > 0 ? config.addresses : link.ips;
    const mac = config.hardwareAddr !== undefined ? parseMac(config.hardwareAddr) : link.mac;
    s.conditions.push(ready('NetworkDeviceReady', 'Ready', now));
    s.networkData = {
      interfaceName: config.name !== undefined && config.name !== '' ? config.name : link.ifName,
      ...(ips.length > 0 ? { ips: [...ips] } : {}),
      hardwareAddress: mac ?? '',
    };
    // Routes, rules and neighbours applied: with none asked for, nothing can fail.
    s.conditions.push(ready('NetworkReady', 'NetworkReady', now));
  } else if (link.rdmaDevice !== null) s.conditions.push(ready('RDMAOnlyDeviceReady', 'Ready', now));
  return s;
}

/**
 * The config DRANET uses for one request (`PrepareResourceClaims`): the first of the claim's opaque
 * configs for the driver that names the request or no request, and decodes; none: the empty config.
 */
export function requestConfig(
  claim: ResourceClaim,
  driver: string,
  request: string,
): { config: NicInterfaceConfig; errors: string[] } {
  const errors: string[] = [];
  for (const c of claim.status?.allocation?.devices?.config ?? []) {
    if (!c.opaque || c.opaque.driver !== driver) continue;
    if ((c.requests ?? []).length > 0 && !(c.requests ?? []).includes(request)) continue;
    const d = decodeNicConfig(c.opaque.parameters);
    if (d.errors.length > 0) {
      errors.push(...d.errors);
      continue;
    }
    if (d.config) return { config: d.config, errors };
  }
  return { config: {}, errors };
}

/**
 * The status DRANET applies for `claim`'s devices of `driver` in `pool`, or null where it has none
 * (no such device) or would have failed the prepare (`errors`: a config it refuses).
 */
export function nicClaimStatus(
  claim: ResourceClaim,
  o: { driver: string; pool: string; link: (device: string) => NicLink | undefined; now: Date },
): { apply: ClaimStatusApply | null; errors: string[] } {
  const now = rfc3339(o.now);
  const devices: AllocatedDeviceStatus[] = [];
  const errors: string[] = [];
  for (const r of claim.status?.allocation?.devices?.results ?? []) {
    if (r.driver !== o.driver || r.pool !== o.pool) continue;
    const link = o.link(r.device);
    if (!link) continue;
    const c = requestConfig(claim, o.driver, r.request);
    errors.push(...c.errors);
    devices.push(deviceStatus({ driver: o.driver, pool: o.pool, device: r.device }, link, c.config, now));
  }
  if (devices.length === 0 || errors.length > 0) return { apply: null, errors };
  const { name, namespace } = claim.metadata;
  return {
    apply: {
      kind: 'ResourceClaim',
      apiVersion: 'resource.k8s.io/v1',
      metadata: { name, namespace },
      status: { devices },
    },
    errors,
  };
}
