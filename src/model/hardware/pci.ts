import { FakegpuError, show } from '../../errors.js';

const BDF = /^(?:([0-9a-f]{4}|[0-9a-f]{8}):)?([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$/i;

/**
 * Canonical extended BDF (`0000:3b:00.0`). Accepts NVML's 8-digit domain (`00000000:3B:00.0`) and a
 * missing domain (`3b:00.0`), since users paste from both `nvidia-smi` and `lspci`.
 */
export function canonicalBusId(text: string, field: string): string {
  const m = BDF.exec(text.trim());
  const [domain = '0000', bus, dev, fn] = m ? m.slice(1) : [];
  if (!m || bus === undefined || dev === undefined || fn === undefined || Number.parseInt(dev, 16) > 0x1f) {
    throw new FakegpuError(
      field,
      `${show(text)} is not a PCI bus ID; expected DDDD:BB:DD.F in hex with device <= 1f and function <= 7, e.g. "0000:3b:00.0"`,
    );
  }
  const d = domain.length === 8 ? domain.slice(4) : domain;
  if (domain.length === 8 && domain.slice(0, 4) !== '0000') {
    throw new FakegpuError(field, `${show(text)} has a PCI domain wider than 16 bits`);
  }
  return `${d}:${bus}:${dev}.${fn}`.toLowerCase();
}

const ROOT = /^pci([0-9a-f]{4}):([0-9a-f]{2})$/i;

export function canonicalPcieRoot(text: string, field: string): string {
  if (!ROOT.test(text.trim())) {
    throw new FakegpuError(
      field,
      `${show(text)} is not a PCIe root; expected pci<domain>:<bus> in hex, e.g. "pci0000:00"`,
    );
  }
  return text.trim().toLowerCase();
}

/** NVML's `pciInfo.busId` form: 8-digit domain, upper case. */
export function nvmlBusId(busId: string): string {
  return `0000${busId}`.toUpperCase();
}

/** The root a device sits on when nothing else is known: its own bus, as on a VM's PCI expander bridges. */
export function rootOfOwnBus(busId: string): string {
  return `pci${busId.slice(0, 7)}`;
}
