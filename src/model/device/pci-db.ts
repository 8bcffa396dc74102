import { MiB } from '../../kube/types/quantity.js';

/**
 * What go-nvlib's `nvpci` reads of an NVIDIA GPU from sysfs and the PCI ID database rather than from
 * NVML: the pci.ids device name (`pciDB.GetDeviceName`) and the sizes of its 64-bit BARs. NVIDIA's VFIO
 * devices publish these (`productName`, `addressableMemory`), since a GPU bound to vfio-pci has no NVML.
 *
 * Provenance (docs/fidelity.md): the names of 10de:2330, 2331, 2901 and 1eb8 were seen in extracts of
 * pci.ids in public repositories; the others are pci.ids' naming pattern (chip, then the product in
 * brackets) and inferred. BAR1 sizes are nvidia-smi's "BAR1 Memory Usage / Total" where a capture in
 * test/fixtures/nvidia-smi has one (H100 SXM, A100 SXM4 40GB, L40S, T4, GB200, GB300), inferred from the
 * same family otherwise. BAR3, the second 64-bit BAR of every data-centre GPU, is 32 MiB (inferred).
 */
interface PciEntry {
  name: string;
  bar1MiB: number;
}

const PCI_DB: Record<number, PciEntry> = {
  0x20b0: { name: 'GA100 [A100 SXM4 40GB]', bar1MiB: 65536 },
  0x20b2: { name: 'GA100 [A100 SXM4 80GB]', bar1MiB: 131072 },
  0x20f1: { name: 'GA100 [A100 PCIe 40GB]', bar1MiB: 65536 },
  0x20b5: { name: 'GA100 [A100 PCIe 80GB]', bar1MiB: 131072 },
  0x20b7: { name: 'GA100GL [A30 PCIe]', bar1MiB: 32768 },
  0x2236: { name: 'GA102GL [A10]', bar1MiB: 32768 },
  0x2237: { name: 'GA102GL [A10G]', bar1MiB: 32768 },
  0x1eb8: { name: 'TU104GL [Tesla T4]', bar1MiB: 256 },
  0x27b8: { name: 'AD104GL [L4]', bar1MiB: 32768 },
  0x26b9: { name: 'AD102GL [L40S]', bar1MiB: 65536 },
  0x2330: { name: 'GH100 [H100 SXM5 80GB]', bar1MiB: 131072 },
  0x2331: { name: 'GH100 [H100 PCIe]', bar1MiB: 131072 },
  0x2321: { name: 'GH100L [H100 NVL]', bar1MiB: 131072 },
  0x2335: { name: 'GH100 [H200 SXM 141GB]', bar1MiB: 262144 },
  0x2342: { name: 'GH100 [GH200 120GB / 480GB]', bar1MiB: 262144 },
  0x2901: { name: 'GB100 [B200]', bar1MiB: 262144 },
  0x2941: { name: 'GB100 [GB200]', bar1MiB: 262144 },
  0x31c2: { name: 'GB110 [GB300]', bar1MiB: 524288 },
  0x2bb5: { name: 'GB202GL [RTX PRO 6000 Blackwell Server Edition]', bar1MiB: 131072 },
};

/** go-nvlib's answer when pci.ids has no name for the device. */
export const UNKNOWN_DEVICE = 'UNKNOWN_DEVICE';
const BAR3_MIB = 32;
/** A GPU of a model the table lacks still has BAR1 and BAR3; 256 MiB is the smallest BAR1 NVIDIA ships. */
const FALLBACK_BAR1_MIB = 256;

export function pciDeviceName(deviceId: number): string {
  return PCI_DB[deviceId]?.name ?? UNKNOWN_DEVICE;
}

/** go-nvlib's `GetTotalAddressableMemory(true)`, second result: the 64-bit BARs' sum, next power of two. */
export function addressableMemoryBytes(deviceId: number): bigint {
  const total = BigInt((PCI_DB[deviceId]?.bar1MiB ?? FALLBACK_BAR1_MIB) + BAR3_MIB) * MiB;
  let p = 1n;
  while (p < total) p <<= 1n;
  return p;
}
