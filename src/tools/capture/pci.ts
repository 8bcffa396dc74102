import { FakegpuError, show } from '../../errors.js';
import { canonicalBusId } from '../../model/hardware/pci.js';

/**
 * Where PCI functions sit, from what a node shows without extra tools:
 *   - `lspci -D -vmm [-nn]`: records of `Key:\tvalue` lines split by blank lines (Slot, Class, Vendor,
 *     Device, NUMANode; with -nn the IDs in brackets, `Mellanox Technologies [15b3]`);
 *   - the links under /sys/bus/pci/devices, as `ls -l` prints them (`0000:1b:00.0 -> ../../../devices/
 *     pci0000:15/0000:15:01.0/…/0000:1b:00.0`) or as the capture script does (`<bdf> <readlink -f>
 *     <numa_node>`): the first `pciDDDD:BB` of the path is the root complex, as NVIDIA's driver reads it.
 */

export interface LspciFunction {
  busId: string;
  className: string;
  vendor: string;
  device: string;
  /** From `[15b3]` with -nn; undefined without. */
  vendorId: string | undefined;
  deviceId: string | undefined;
  numaNode: number | undefined;
}

const ID = /\s*\[([0-9a-f]{4})\]\s*$/i;

export function parseLspci(text: string, source: string): LspciFunction[] {
  const out: LspciFunction[] = [];
  for (const [n, block] of text.split(/\r?\n\s*\r?\n/).entries()) {
    const fields = new Map<string, string>();
    for (const line of block.split(/\r?\n/)) {
      const m = /^(\w+):\s*(.*)$/.exec(line.trim());
      if (m?.[1] !== undefined && m[2] !== undefined && !fields.has(m[1])) fields.set(m[1], m[2].trim());
    }
    const slot = fields.get('Slot');
    if (slot === undefined) {
      if (fields.size === 0) continue;
      throw new FakegpuError(
        source,
        `record ${n + 1} has no Slot line; expected the output of lspci -D -vmm`,
      );
    }
    const numa = fields.get('NUMANode');
    if (numa !== undefined && !/^-?\d+$/.test(numa))
      throw new FakegpuError(source, `record ${n + 1} (${slot}): NUMANode ${show(numa)} is not a number`);
    const vendor = fields.get('Vendor') ?? '';
    const device = fields.get('Device') ?? '';
    out.push({
      busId: canonicalBusId(slot, `${source}: record ${n + 1} Slot`),
      className: (fields.get('Class') ?? '').replace(ID, ''),
      vendor: vendor.replace(ID, ''),
      device: device.replace(ID, ''),
      vendorId: ID.exec(vendor)?.[1]?.toLowerCase(),
      deviceId: ID.exec(device)?.[1]?.toLowerCase(),
      numaNode: numa === undefined ? undefined : Number(numa),
    });
  }
  if (out.length === 0)
    throw new FakegpuError(source, 'no PCI function; expected the output of lspci -D -vmm');
  return out;
}

export interface SysfsFunction {
  busId: string;
  /** null where the path has no `pciDDDD:BB` component (a Hyper-V vPCI device hangs off VMBus). */
  pcieRoot: string | null;
  numaNode: number | undefined;
}

const BDF_AT_END = /([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])\/?$/i;
const ROOT = /(?:^|\/)(pci[0-9a-f]{4}:[0-9a-f]{2})(?:\/|$)/i;

export function parseSysfsLinks(text: string, source: string): SysfsFunction[] {
  const out: SysfsFunction[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('total ')) continue;
    // `ls -l`: `… 0000:1b:00.0 -> ../../../devices/…`; the script: `0000:1b:00.0 /sys/devices/… 0`.
    const arrow = /(\S+) -> (\S+)$/.exec(line);
    const parts = line.split(/\s+/);
    const [name, path, numa] = arrow ? [arrow[1], arrow[2], undefined] : [parts[0], parts[1], parts[2]];
    if (name === undefined || path === undefined) continue;
    const bdf = BDF_AT_END.exec(name)?.[1];
    if (bdf === undefined || !BDF_AT_END.test(path)) continue;
    out.push({
      busId: canonicalBusId(bdf, `${source}: ${name}`),
      pcieRoot: ROOT.exec(path)?.[1]?.toLowerCase() ?? null,
      numaNode: numa !== undefined && /^-?\d+$/.test(numa) ? Number(numa) : undefined,
    });
  }
  if (out.length === 0)
    throw new FakegpuError(
      source,
      'no PCI device link; expected `ls -l /sys/bus/pci/devices` or the capture script’s pci section',
    );
  return out;
}
