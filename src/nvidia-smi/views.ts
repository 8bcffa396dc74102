/**
 * What the fake `nvidia-smi` shows for one device, rendered ahead of time in nvidia-smi's own formats.
 * Each prepared device gets a directory of these small files, mounted into the container; the script
 * (`script.ts`) only stitches them together, so the container needs a POSIX shell and nothing else.
 */

export interface SmiGpu {
  name: string;
  uuid: string;
  /** NVML form, `00000000:10:1C.0`. */
  busId: string;
  memoryMiB: number;
  driverVersion: string;
  cudaVersion: string;
  computeCap: string;
  powerLimitW: number;
  minor: number;
  architecture: string;
  migMode: 'Enabled' | 'Disabled' | 'N/A';
  pciDeviceId: number;
  pciSubsystemId: number;
  /** Set when the sharing config of the claim changed the GPU, as `nvidia-smi compute-policy` would. */
  timeSliceInterval?: string;
}

export interface SmiMig {
  profile: string;
  uuid: string;
  memoryMiB: number;
  gpuInstanceId: number;
  computeInstanceId: number;
  multiprocessors: number;
}

export interface DeviceView {
  /** Directory name: bus ID first, so a sorted listing is nvidia-smi's order. */
  dir: string;
  files: Record<string, string>;
}

const hex8 = (n: number): string => `0x${n.toString(16).toUpperCase().padStart(8, '0')}`;

function pad(s: string, n: number): string {
  return s.length >= n ? s.slice(0, n) : s + ' '.repeat(n - s.length);
}

function lpad(s: string, n: number): string {
  return s.length >= n ? s : ' '.repeat(n - s.length) + s;
}

/** The three table rows of `nvidia-smi` for a GPU; `@I@` is replaced by the index the container sees. */
function tableRows(g: SmiGpu): string {
  const name = pad(g.name.length > 29 ? `${g.name.slice(0, 26)}...` : g.name, 29);
  const mem = `${lpad('0MiB', 9)} / ${lpad(`${g.memoryMiB}MiB`, 9)}`;
  return [
    `| @I@  ${name}  On  | ${lpad(g.busId, 18)} Off |                    0 |`,
    `| N/A   32C    P0  ${lpad(`${Math.round(g.powerLimitW / 10)}W`, 14)} / ${lpad(`${g.powerLimitW}W`, 5)} | ${lpad(mem, 22)} |      0%      Default |`,
    `|                                         |                        | ${lpad(g.migMode, 20)} |`,
    '+-----------------------------------------+------------------------+----------------------+',
  ].join('\n');
}

function queryBlock(g: SmiGpu, mig: SmiMig | null): string {
  const lines = [
    `GPU ${g.busId}`,
    `    Product Name                          : ${g.name}`,
    '    Product Brand                         : NVIDIA',
    `    Product Architecture                  : ${g.architecture}`,
    '    Persistence Mode                      : Enabled',
    '    MIG Mode',
    `        Current                           : ${g.migMode}`,
    `        Pending                           : ${g.migMode}`,
    `    GPU UUID                              : ${g.uuid}`,
    `    Minor Number                          : ${g.minor}`,
    '    PCI',
    `        Bus                               : 0x${g.busId.slice(9, 11)}`,
    `        Device                            : 0x${g.busId.slice(12, 14)}`,
    `        Domain                            : 0x${g.busId.slice(0, 8)}`,
    `        Device Id                         : ${hex8(((g.pciDeviceId << 16) | 0x10de) >>> 0)}`,
    `        Bus Id                            : ${g.busId}`,
    `        Sub System Id                     : ${hex8(((g.pciSubsystemId << 16) | 0x10de) >>> 0)}`,
    '    Compute Mode                          : Default',
  ];
  if (g.timeSliceInterval) lines.push(`    Compute Policy Timeslice              : ${g.timeSliceInterval}`);
  lines.push(
    '    FB Memory Usage',
    `        Total                             : ${g.memoryMiB} MiB`,
    '        Reserved                          : 0 MiB',
    '        Used                              : 0 MiB',
    `        Free                              : ${g.memoryMiB} MiB`,
    '    Power Readings',
    `        Current Power Limit               : ${g.powerLimitW.toFixed(2)} W`,
  );
  if (mig) {
    lines.push(
      '    MIG Devices',
      '        MIG Device',
      `            Index                         : @M@`,
      `            GPU Instance ID               : ${mig.gpuInstanceId}`,
      `            Compute Instance ID           : ${mig.computeInstanceId}`,
      `            Multiprocessor count          : ${mig.multiprocessors}`,
      '            FB Memory Usage',
      `                Total                     : ${mig.memoryMiB} MiB`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** `--query-gpu` fields: name, value, and the unit nvidia-smi appends (dropped with `nounits`). */
function fields(g: SmiGpu): string {
  const rows: [string, string, string][] = [
    ['name', g.name, ''],
    ['gpu_name', g.name, ''],
    ['uuid', g.uuid, ''],
    ['gpu_uuid', g.uuid, ''],
    ['pci.bus_id', g.busId, ''],
    ['gpu_bus_id', g.busId, ''],
    ['memory.total', String(g.memoryMiB), 'MiB'],
    ['memory.used', '0', 'MiB'],
    ['memory.free', String(g.memoryMiB), 'MiB'],
    ['driver_version', g.driverVersion, ''],
    ['compute_cap', g.computeCap, ''],
    ['power.limit', g.powerLimitW.toFixed(2), 'W'],
    ['mig.mode.current', g.migMode, ''],
    ['mig.mode.pending', g.migMode, ''],
    ['pci.device_id', hex8(((g.pciDeviceId << 16) | 0x10de) >>> 0), ''],
    ['pci.sub_device_id', hex8(((g.pciSubsystemId << 16) | 0x10de) >>> 0), ''],
    ['persistence_mode', 'Enabled', ''],
    ['compute_mode', 'Default', ''],
    ['utilization.gpu', '0', '%'],
    ['temperature.gpu', '32', ''],
  ];
  return `${rows.map((r) => r.join('\t')).join('\n')}\n`;
}

export function deviceView(deviceName: string, g: SmiGpu, mig: SmiMig | null): DeviceView {
  const gpuLine = `GPU @I@: ${g.name} (UUID: ${g.uuid})`;
  const files: Record<string, string> = {
    L: mig ? `${gpuLine}\n  MIG ${pad(mig.profile, 12)} Device @M@: (UUID: ${mig.uuid})\n` : `${gpuLine}\n`,
    table: `${tableRows(g)}\n`,
    q: queryBlock(g, mig),
    fields: fields(g),
    header: `${g.driverVersion}\t${g.cudaVersion}\n`,
  };
  if (mig) files['MIG'] = `${mig.uuid}\n`;
  return { dir: `${g.busId}_${deviceName}`, files };
}
