import type { Section } from './bundle.js';
import { parseLgip, parseLgipp } from './mig-tables.js';
import { captureNics } from './net.js';
import type { NodeInputs, PciFacts, PciPlace } from './node.js';
import { parseLspci, parseSysfsLinks } from './pci.js';
import { parseSmiXml } from './smi-xml.js';
import { parseTopo } from './topo.js';

/** One input's text and how to name it in messages and provenance (the file, or bundle section). */
export interface Input {
  text: string;
  source: string;
}

export type Inputs = Partial<Record<Section, Input>>;

/** Parses what was given; NUMA and roots from sysfs first (what the driver reads), then lspci, then topo. */
export function readNodeInputs(inputs: Inputs): { node: NodeInputs; warnings: string[] } {
  const xml = inputs['nvidia-smi-xml'];
  if (!xml) throw new Error('readNodeInputs needs nvidia-smi -q -x');
  const warnings: string[] = [];
  const smi = parseSmiXml(xml.text, xml.source);
  const topo = inputs.topo ? parseTopo(inputs.topo.text, inputs.topo.source) : undefined;
  if (topo) warnings.push(...topo.notes);
  const lspci = inputs.lspci ? parseLspci(inputs.lspci.text, inputs.lspci.source) : [];
  const sysfs = inputs.pci ? parseSysfsLinks(inputs.pci.text, inputs.pci.source) : [];

  const places = new Map<string, PciPlace>();
  for (const f of lspci) places.set(f.busId, { numaNode: f.numaNode });
  for (const s of sysfs)
    places.set(s.busId, { numaNode: s.numaNode ?? places.get(s.busId)?.numaNode, pcieRoot: s.pcieRoot });
  const numaFrom = sysfs.some((s) => s.numaNode !== undefined)
    ? inputs.pci?.source
    : lspci.some((f) => f.numaNode !== undefined)
      ? inputs.lspci?.source
      : undefined;
  const pci: PciFacts | undefined =
    places.size > 0
      ? { places, numaFrom, rootsFrom: sysfs.length > 0 ? inputs.pci?.source : undefined }
      : undefined;

  const lgip = inputs['mig-lgip'];
  const lgipp = inputs['mig-lgipp'];
  const migTables = lgip
    ? {
        lgip: parseLgip(lgip.text, lgip.source),
        lgipp: lgipp ? parseLgipp(lgipp.text, lgipp.source) : [],
        from: lgipp ? `${lgip.source} and ${lgipp.source}` : lgip.source,
      }
    : undefined;
  let nics: NodeInputs['nics'];
  if (lspci.length > 0) {
    const found = captureNics(lspci, sysfs, {
      ibdev2netdev: inputs.ibdev2netdev?.text,
      ipLink: inputs['ip-link']?.text,
      ipAddr: inputs['ip-addr']?.text,
      ipRoute: inputs['ip-route']?.text,
      netLinks: inputs.net?.text,
      rdmaLinks: inputs.rdma?.text,
    });
    nics = { entries: found.entries, from: found.inputs.join(', ') };
    for (const u of found.unknown)
      warnings.push(`${inputs.lspci?.source ?? 'lspci'}: ${u}: not in fakegpu's NIC catalog, left out`);
    for (const u of found.unnamed)
      warnings.push(
        `${inputs.lspci?.source ?? 'lspci'}: ${u}: no input names its network interface (give --ibdev2netdev, or --bundle with the net section), left out`,
      );
  }
  return {
    node: {
      smi,
      topoNuma: topo?.gpuNuma,
      pci,
      nics,
      migTables,
      names: { smi: xml.source, topo: inputs.topo?.source },
    },
    warnings,
  };
}
