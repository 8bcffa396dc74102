import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { PreparedClaim, PreparedDevice } from '../checkpoint/checkpoint.js';
import { removeDurably, writeDurably } from '../durable/file.js';
import { under } from '../durable/path.js';
import type { DeviceAttribute } from '../../kube/types/resource.js';

/**
 * KEP-5304 device metadata (gate DeviceMetadata), as the kubeletplugin helper of
 * k8s.io/dynamic-resource-allocation writes it for NVIDIA's driver (v0.5.0 driver.go
 * `EnableDeviceMetadata` with v1beta1 and v1alpha1; device_state.go fills attributes only for VFIO
 * devices). Per request of every prepared claim: a JSON file, and a CDI spec that mounts it read-only
 * at the path KEP-5304 defines, whose ID goes to the request's first device.
 *
 * The container side is NVIDIA's. The host file lives under the claim's own folder of fakegpu's state
 * dir rather than under the kubelet plugins dir, so it goes, and is swept, with the claim's other files.
 */

export const METADATA_VERSIONS = ['metadata.resource.k8s.io/v1beta1', 'metadata.resource.k8s.io/v1alpha1'];
export const CONTAINER_ROOT = '/var/run/kubernetes.io/dra-device-attributes';
/** The claim annotation naming the pod's claim entry when the claim came from a template. */
export const POD_CLAIM_NAME = 'resource.kubernetes.io/pod-claim-name';

export interface ClaimIdentity {
  uid: string;
  namespace: string;
  name: string;
  podClaimName?: string | undefined;
}

export function metadataKind(driverName: string): string {
  return `${driverName}/metadata`;
}

function cdiName(uid: string, request: string): string {
  return `${uid}_${request}`;
}

function specPath(cdiRoot: string, driverName: string, uid: string, request: string): string {
  return under(cdiRoot, `${driverName}_metadata_${cdiName(uid, request)}.json`);
}

export function containerPath(c: ClaimIdentity, request: string, driverName: string): string {
  const where = c.podClaimName ? `resourceclaimtemplates/${c.podClaimName}` : `resourceclaims/${c.name}`;
  return `${CONTAINER_ROOT}/${where}/${request}/${driverName}-metadata.json`;
}

const requestOf = (d: PreparedDevice): string => d.requestNames[0] ?? '';

/** The CDI ID of each request's metadata, added to the first device of that request. */
export function withMetadataIds(devices: PreparedDevice[], uid: string, driverName: string): void {
  const seen = new Set<string>();
  for (const d of devices) {
    const r = requestOf(d);
    if (seen.has(r)) continue;
    seen.add(r);
    d.cdiDeviceIds.push(`${metadataKind(driverName)}=${cdiName(uid, r)}`);
  }
}

/** One pretty-printed DeviceMetadata object per version, as a JSON stream. */
function document(
  c: ClaimIdentity,
  request: string,
  devices: readonly PreparedDevice[],
  driverName: string,
  attributes: (device: string) => Record<string, DeviceAttribute> | null,
): string {
  const entries = devices.map((d) => {
    const a = attributes(d.deviceName);
    return { driver: driverName, pool: d.poolName, name: d.deviceName, ...(a ? { attributes: a } : {}) };
  });
  return (
    METADATA_VERSIONS.map((apiVersion) =>
      JSON.stringify(
        {
          apiVersion,
          kind: 'DeviceMetadata',
          metadata: { name: c.name, namespace: c.namespace, uid: c.uid, generation: 1 },
          ...(c.podClaimName ? { podClaimName: c.podClaimName } : {}),
          requests: [{ name: request, devices: entries }],
        },
        null,
        2,
      ),
    ).join('\n') + '\n'
  );
}

/**
 * Writes the metadata files and their CDI specs of a prepared claim under `claimDir` and `cdiRoot`.
 * `attributes` answers a VFIO device's published attributes, null for every other device.
 */
export function writeMetadata(
  c: PreparedClaim & ClaimIdentity,
  o: { claimDir: string; cdiRoot: string; driverName: string },
  attributes: (device: string) => Record<string, DeviceAttribute> | null,
): void {
  const requests = [...new Set(c.devices.map(requestOf))];
  for (const request of requests) {
    const host = under(o.claimDir, 'dra-device-metadata', request, 'metadata.json');
    const devices = c.devices.filter((d) => requestOf(d) === request);
    writeDurably(host, document(c, request, devices, o.driverName, attributes), { mode: 0o644 });
    const spec = {
      cdiVersion: '0.5.0',
      kind: metadataKind(o.driverName),
      devices: [
        {
          name: cdiName(c.uid, request),
          containerEdits: {
            mounts: [
              {
                hostPath: host,
                containerPath: containerPath(c, request, o.driverName),
                options: ['ro', 'bind'],
              },
            ],
          },
        },
      ],
    };
    writeDurably(specPath(o.cdiRoot, o.driverName, c.uid, request), JSON.stringify(spec), { mode: 0o644 });
  }
}

/**
 * Removes the metadata CDI specs of claims `keep` does not answer true for: of one claim at unprepare,
 * of every claim no record holds at start (a crash between the record's removal and this).
 */
export function removeMetadataSpecs(
  cdiRoot: string,
  driverName: string,
  keep: (uid: string) => boolean,
): number {
  const prefix = `${driverName}_metadata_`;
  let names: string[];
  try {
    names = readdirSync(cdiRoot);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    // A temporary file a crash left beside a spec starts with the same name, and goes the same way.
    if (!name.startsWith(prefix)) continue;
    const uid = name.slice(prefix.length).split('_')[0] ?? '';
    if (keep(uid)) continue;
    removeDurably(join(cdiRoot, name));
    removed++;
  }
  return removed;
}
