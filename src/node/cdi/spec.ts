/**
 * CDI specs as NVIDIA's driver writes them: one transient spec per claim, kind `k8s.<driver>/claim`
 * (`k8s.gpu.nvidia.com/claim`), devices named `<claimUID>-<device>`, version 0.5.0 (the lowest that allows
 * names starting with a digit and `hostPath` on device nodes), written with a rename so runtimes never
 * read half a file.
 */

export const CDI_CLASS = 'claim';
export const CDI_VERSION = '0.5.0';

/**
 * NVIDIA's drivers name their CDI vendor `k8s.` + their driver name (`k8s.gpu.nvidia.com`,
 * `k8s.compute-domain.nvidia.com`); doing the same for whatever `--driver-name` says gives two plugins
 * with different driver names on one node spec files of different kinds, so neither one's start-up
 * sweep can take the other's live specs. A driver name is a DNS subdomain, always a valid CDI vendor.
 */
export function cdiKindFor(driverName: string): string {
  return `k8s.${driverName}/${CDI_CLASS}`;
}

export interface DeviceNode {
  path: string;
  hostPath?: string;
  type: 'c';
  major: number;
  minor: number;
  permissions: string;
}

export interface Mount {
  hostPath: string;
  containerPath: string;
  type?: string;
  options: string[];
}

export interface ContainerEdits {
  env?: string[];
  deviceNodes?: DeviceNode[];
  mounts?: Mount[];
}

export interface CdiDevice {
  name: string;
  containerEdits: ContainerEdits;
}

export interface CdiSpec {
  cdiVersion: string;
  kind: string;
  devices: CdiDevice[];
  containerEdits?: ContainerEdits;
}

export function cdiDeviceName(claimUid: string, deviceName: string): string {
  return `${claimUid}-${deviceName}`;
}

export function cdiDeviceId(claimUid: string, deviceName: string, kind: string): string {
  return `${kind}=${cdiDeviceName(claimUid, deviceName)}`;
}

/** `<vendor>-<class>_<claim UID>.yaml`, the name the CDI library gives a transient spec of that kind. */
export function specFileName(claimUid: string, kind: string): string {
  return `${kind.replace('/', '-')}_${claimUid}.yaml`;
}

export const READ_ONLY_BIND = ['ro', 'nosuid', 'nodev', 'rbind', 'rprivate'];
