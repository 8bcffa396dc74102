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
  /** Injected faults; without them `-q` leaves the ECC sections out, as it did before faults existed. */
  health?: SmiHealth;
}

/**
 * Faults injected into a GPU, as nvidia-smi sees them. The counts are DRAM ECC errors since the fault
 * was injected; nothing in the fake reboots or resets a GPU, so the aggregate counters equal these.
 */
export interface SmiHealth {
  /** Fallen off the bus (Xid 79): NVML gives out no handle for it, so nvidia-smi prints an error line. */
  lost: boolean;
  ecc: { correctable: number; uncorrectable: number };
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
  const uncorrectable = String(g.health?.ecc.uncorrectable ?? 0);
  return [
    `| @I@  ${name}  On  | ${lpad(g.busId, 18)} Off | ${lpad(uncorrectable, 20)} |`,
    `| N/A   32C    P0  ${lpad(`${Math.round(g.powerLimitW / 10)}W`, 14)} / ${lpad(`${g.powerLimitW}W`, 5)} | ${lpad(mem, 22)} |      0%      Default |`,
    `|                                         |                        | ${lpad(g.migMode, 20)} |`,
    '+-----------------------------------------+------------------------+----------------------+',
  ].join('\n');
}

/**
 * Row remapping replaced page retirement from Ampere on: these GPUs show `Retired Pages` as N/A and
 * count remapped rows instead; older ones retire pages and have no row remapper.
 */
const ROW_REMAPPING = new Set(['Ampere', 'Ada Lovelace', 'Hopper', 'Blackwell']);

const field = (indent: number, label: string, value: string): string =>
  `${' '.repeat(indent)}${pad(label, 42 - indent)}: ${value}`;

/**
 * The ECC sections of `-q`. Only DRAM errors are injected, so the SRAM counters stay 0. An uncorrectable
 * DRAM error is taken to hit a row (or page) of its own, which the GPU marks for remapping (retirement)
 * at its next reset: it is counted there and stays pending, as no reset comes. Correctable errors remap
 * a row only when they repeat at one address, which the counts cannot tell, so they remap nothing. The
 * bank remap availability histogram is left out: the number of spare banks differs by model.
 */
function eccLines(g: SmiGpu, h: SmiHealth): string[] {
  const c = String(h.ecc.correctable);
  const u = String(h.ecc.uncorrectable);
  const pending = h.ecc.uncorrectable > 0 ? 'Yes' : 'No';
  const lines = [
    '    ECC Mode',
    field(8, 'Current', 'Enabled'),
    field(8, 'Pending', 'Enabled'),
    '    ECC Errors',
  ];
  if (ROW_REMAPPING.has(g.architecture)) {
    const counters = [
      field(12, 'SRAM Correctable', '0'),
      field(12, 'SRAM Uncorrectable Parity', '0'),
      field(12, 'SRAM Uncorrectable SEC-DED', '0'),
      field(12, 'DRAM Correctable', c),
      field(12, 'DRAM Uncorrectable', u),
    ];
    lines.push(
      '        Volatile',
      ...counters,
      '        Aggregate',
      ...counters,
      field(12, 'SRAM Threshold Exceeded', 'No'),
      '        Aggregate Uncorrectable SRAM Sources',
      ...['SRAM L2', 'SRAM SM', 'SRAM Microcontroller', 'SRAM PCIE', 'SRAM Other'].map((l) =>
        field(12, l, '0'),
      ),
      '    Retired Pages',
      field(8, 'Single Bit ECC', 'N/A'),
      field(8, 'Double Bit ECC', 'N/A'),
      field(8, 'Pending Page Blacklist', 'N/A'),
      '    Remapped Rows',
      field(8, 'Correctable Error', '0'),
      field(8, 'Uncorrectable Error', u),
      field(8, 'Pending', pending),
      field(8, 'Remapping Failure Occurred', 'No'),
    );
  } else {
    const counters = [
      field(12, 'SRAM Correctable', '0'),
      field(12, 'SRAM Uncorrectable', '0'),
      field(12, 'DRAM Correctable', c),
      field(12, 'DRAM Uncorrectable', u),
    ];
    lines.push(
      '        Volatile',
      ...counters,
      '        Aggregate',
      ...counters,
      '    Retired Pages',
      field(8, 'Single Bit ECC', '0'),
      field(8, 'Double Bit ECC', u),
      field(8, 'Pending Page Blacklist', pending),
      field(4, 'Remapped Rows', 'N/A'),
    );
  }
  return lines;
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
    ...(g.health ? eccLines(g, g.health) : []),
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
    ['ecc.mode.current', 'Enabled', ''],
    ['ecc.errors.corrected.volatile.total', String(g.health?.ecc.correctable ?? 0), ''],
    ['ecc.errors.uncorrected.volatile.total', String(g.health?.ecc.uncorrectable ?? 0), ''],
    ['ecc.errors.corrected.aggregate.total', String(g.health?.ecc.correctable ?? 0), ''],
    ['ecc.errors.uncorrected.aggregate.total', String(g.health?.ecc.uncorrectable ?? 0), ''],
  ];
  return `${rows.map((r) => r.join('\t')).join('\n')}\n`;
}

/**
 * nvidia-smi's line for a GPU it cannot open; `@I@` is its index. Drivers from R570 on name the GPU by
 * index and by bus ID with a four-digit domain (R560 and older wrote `GPU0000:1B:00.0`). Empty for a
 * GPU that is there: views are updated in place and never lose a file, so a GPU that comes back must
 * overwrite the line rather than drop it.
 */
function lostLine(g: SmiGpu): string {
  if (!g.health?.lost) return '';
  return `Unable to determine the device handle for GPU@I@: ${g.busId.slice(4)}: GPU is lost.  Reboot the system to recover this GPU\n`;
}

export function deviceView(deviceName: string, g: SmiGpu, mig: SmiMig | null): DeviceView {
  const gpuLine = `GPU @I@: ${g.name} (UUID: ${g.uuid})`;
  const files: Record<string, string> = {
    lost: lostLine(g),
    L: mig ? `${gpuLine}\n  MIG ${pad(mig.profile, 12)} Device @M@: (UUID: ${mig.uuid})\n` : `${gpuLine}\n`,
    table: `${tableRows(g)}\n`,
    q: queryBlock(g, mig),
    fields: fields(g),
    header: `${g.driverVersion}\t${g.cudaVersion}\n`,
  };
  if (mig) files['MIG'] = `${mig.uuid}\n`;
  return { dir: `${g.busId}_${deviceName}`, files };
}
