import { NIC_MODELS, type NicModel } from '../../model/catalog/nics.js';
import { clip, FakegpuError } from '../../errors.js';
import { canonicalBusId } from '../../model/hardware/pci.js';
import type { NicEntry } from '../../model/preset/machine-spec.js';
import type { LspciFunction, SysfsFunction } from './pci.js';

/**
 * The node's NICs as DRANET would find them: every PCI function lspci shows whose IDs (or, without -nn,
 * name) are in the NIC catalog, named by the network inputs where given:
 *   - `ibdev2netdev [-v]`: `mlx5_0 port 1 ==> ibp24s0 (Up)`, with -v the bus ID first;
 *   - `ip -j link`: ifname, address, mtu; `ip -j addr`: the IPv4 address with its prefix;
 *   - the capture script's `net` and `rdma` sections: `<name> <readlink -f …/device>`;
 *   - `ip -j route show default`: the NIC carrying the default route, which DRANET leaves out.
 */

export interface NetInputs {
  ibdev2netdev?: string | undefined;
  ipLink?: string | undefined;
  ipAddr?: string | undefined;
  ipRoute?: string | undefined;
  /** `<ifname> <path>` lines: /sys/class/net/<if>/device resolved. */
  netLinks?: string | undefined;
  /** `<rdma device> <path>` lines: /sys/class/infiniband/<dev>/device resolved. */
  rdmaLinks?: string | undefined;
}

function nicModel(f: LspciFunction): NicModel | undefined {
  if (f.vendorId !== undefined && f.deviceId !== undefined)
    return NIC_MODELS.find((m) => m.vendorId === f.vendorId && m.deviceId === f.deviceId);
  // Without -nn: the bracketed family name lspci prints (`MT2910 Family [ConnectX-7]`) or pci.ids' name.
  return NIC_MODELS.find(
    (m) =>
      f.vendor === m.vendorName &&
      (f.device === m.deviceName || new RegExp(`\\[${m.key.replace(/[-\s]/g, '[- ]')}\\]`).test(f.device)),
  );
}

/** `<name> <path ending in a bus ID>` lines → name → bus ID. */
function linkLines(text: string | undefined, source: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of (text ?? '').split(/\r?\n/)) {
    const [name, path] = line.trim().split(/\s+/);
    const bdf = /([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])\/?$/i.exec(path ?? '')?.[1];
    if (name && bdf) out.set(name, canonicalBusId(bdf, source));
  }
  return out;
}

function json(text: string | undefined, source: string): unknown[] {
  if (text === undefined || text.trim() === '') return [];
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new FakegpuError(
      source,
      // JSON.parse quotes the input, new lines and all.
      `not JSON (${clip(e instanceof Error ? e.message : String(e))}); run ip with -j`,
    );
  }
  if (!Array.isArray(v)) throw new FakegpuError(source, 'expected a JSON array, as ip -j prints');
  return v as unknown[];
}

const str = (o: unknown, k: string): string | undefined => {
  if (typeof o !== 'object' || o === null) return undefined;
  const v = (o as Record<string, unknown>)[k];
  return typeof v === 'string' ? v : undefined;
};
const num = (o: unknown, k: string): number | undefined => {
  if (typeof o !== 'object' || o === null) return undefined;
  const v = (o as Record<string, unknown>)[k];
  return typeof v === 'number' ? v : undefined;
};

export function captureNics(
  lspci: readonly LspciFunction[],
  sysfs: readonly SysfsFunction[],
  net: NetInputs,
): { entries: NicEntry[]; inputs: string[]; unknown: string[]; unnamed: string[] } {
  const inputs = ['lspci -D -vmm'];
  const ifByBus = new Map<string, string>();
  const rdmaByBus = new Map<string, string>();
  for (const [name, bus] of linkLines(net.netLinks, 'net links')) ifByBus.set(bus, name);
  for (const [name, bus] of linkLines(net.rdmaLinks, 'rdma links')) rdmaByBus.set(bus, name);
  if (net.netLinks || net.rdmaLinks) inputs.push('/sys/class/{net,infiniband}');
  const rdmaToIf = new Map<string, string>();
  for (const line of (net.ibdev2netdev ?? '').split(/\r?\n/)) {
    const m = /^(?:([0-9a-f:.]+)\s+)?(\S+)\s.*==>\s*(\S+)/i.exec(line.trim());
    if (!m?.[2] || !m[3]) continue;
    rdmaToIf.set(m[2], m[3]);
    if (m[1] && /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/i.test(m[1]))
      rdmaByBus.set(canonicalBusId(m[1], 'ibdev2netdev'), m[2]);
  }
  if (net.ibdev2netdev) inputs.push('ibdev2netdev');
  const links = new Map(json(net.ipLink, 'ip -j link').map((l) => [str(l, 'ifname') ?? '', l]));
  if (net.ipLink) inputs.push('ip -j link');
  const ipv4 = new Map<string, string>();
  for (const a of json(net.ipAddr, 'ip -j addr')) {
    const info = (a as { addr_info?: unknown[] }).addr_info ?? [];
    const v4 = info.find((i) => str(i, 'family') === 'inet');
    const local = str(v4, 'local');
    const prefix = num(v4, 'prefixlen');
    const ifname = str(a, 'ifname');
    if (ifname && local && prefix !== undefined) ipv4.set(ifname, `${local}/${prefix}`);
  }
  if (net.ipAddr) inputs.push('ip -j addr');
  const defaultDevs = new Set(json(net.ipRoute, 'ip -j route').map((r) => str(r, 'dev')));
  if (net.ipRoute) inputs.push('ip -j route show default');
  const place = new Map(sysfs.map((s) => [s.busId, s]));

  const entries: NicEntry[] = [];
  const unnamed: string[] = [];
  for (const f of lspci) {
    const model = nicModel(f);
    if (!model) continue;
    const rdmaDevice = rdmaByBus.get(f.busId);
    const ifName = ifByBus.get(f.busId) ?? (rdmaDevice ? rdmaToIf.get(rdmaDevice) : undefined);
    // A function with a netdev is published by its interface name, which only the network inputs know.
    if (!ifName && model.encapsulation !== null) {
      unnamed.push(`${f.busId} ${model.key}`);
      continue;
    }
    const e: NicEntry = { busId: f.busId, model: model.key };
    if (ifName) e.ifName = ifName;
    const root = place.get(f.busId)?.pcieRoot;
    if (root !== undefined) e.pcieRoot = root;
    const numa = f.numaNode ?? place.get(f.busId)?.numaNode;
    if (numa !== undefined) e.numaNode = numa;
    if (rdmaDevice) e.rdmaDevice = rdmaDevice;
    const link = ifName ? links.get(ifName) : undefined;
    const mac = str(link, 'address');
    if (mac && /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/.test(mac)) e.mac = mac;
    const mtu = num(link, 'mtu');
    if (mtu !== undefined) e.mtu = mtu;
    const addr = ifName ? ipv4.get(ifName) : undefined;
    if (addr) e.ipv4 = addr;
    if (ifName && defaultDevs.has(ifName)) e.primary = true;
    entries.push(e);
  }
  const unknown = lspci
    .filter((f) => /ethernet|infiniband|network/i.test(f.className) && !nicModel(f))
    .map((f) => `${f.busId} ${f.vendor} ${f.device}`);
  return { entries, inputs, unknown, unnamed };
}
