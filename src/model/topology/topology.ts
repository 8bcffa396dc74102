import type { GpuHardware, Machine, NicHardware } from '../hardware/machine.js';
import { nicDeviceName } from '../nic/attributes.js';

/**
 * The machine as alignment sees it: NUMA nodes holding PCIe roots holding GPUs and NICs, and which
 * GPU–NIC pairings `matchAttribute` on `pcieRoot` or `numaNode` can satisfy. Pure, for `fakegpu topo`.
 */

export interface TopoRoot {
  /** `pci<domain>:<bus>`, or null for devices sysfs shows under no root (Hyper-V vPCI). */
  root: string | null;
  gpus: GpuHardware[];
  nics: NicHardware[];
}

export interface TopoNuma {
  /** -1: the platform reports none. */
  numaNode: number;
  roots: TopoRoot[];
}

export interface Alignment {
  /** Roots holding at least one GPU and one published RDMA NIC. */
  sharedRoots: { root: string; gpus: number; rdmaNics: number }[];
  /** NUMA nodes holding GPUs and published RDMA NICs. */
  sharedNuma: { numaNode: number; gpus: number; rdmaNics: number }[];
}

export interface Topology {
  numa: TopoNuma[];
  alignment: Alignment;
}

const byKey =
  <T>(key: (t: T) => string) =>
  (a: T, b: T) =>
    key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;

export function topology(machine: Machine): Topology {
  const numas = new Map<number, Map<string, TopoRoot>>();
  const slot = (numa: number, root: string | null): TopoRoot => {
    const roots = numas.get(numa) ?? new Map<string, TopoRoot>();
    numas.set(numa, roots);
    const key = root ?? '';
    const r = roots.get(key) ?? { root, gpus: [], nics: [] };
    roots.set(key, r);
    return r;
  };
  for (const g of machine.gpus) slot(g.numaNode, g.pcieRoot).gpus.push(g);
  for (const n of machine.nics) slot(n.numaNode, n.pcieRoot).nics.push(n);
  const numa = [...numas.entries()]
    .sort(([a], [b]) => (a < 0 ? 1 : b < 0 ? -1 : a - b))
    .map(([numaNode, roots]) => ({
      numaNode,
      roots: [...roots.values()]
        .map((r) => ({
          ...r,
          gpus: r.gpus.sort(byKey((g) => g.busId)),
          nics: r.nics.sort(byKey((n) => n.busId)),
        }))
        .sort(byKey((r) => r.gpus[0]?.busId ?? r.nics[0]?.busId ?? '')),
    }));
  const rdma = (n: NicHardware): boolean => n.model.rdma && !n.primary;
  const sharedRoots = numa.flatMap((n) =>
    n.roots.flatMap((r) => {
      const nics = r.nics.filter(rdma).length;
      return r.root !== null && r.gpus.length > 0 && nics > 0
        ? [{ root: r.root, gpus: r.gpus.length, rdmaNics: nics }]
        : [];
    }),
  );
  const sharedNuma = numa.flatMap((n) => {
    const gpus = n.roots.reduce((k, r) => k + r.gpus.length, 0);
    const nics = n.roots.reduce((k, r) => k + r.nics.filter(rdma).length, 0);
    return n.numaNode >= 0 && gpus > 0 && nics > 0 ? [{ numaNode: n.numaNode, gpus, rdmaNics: nics }] : [];
  });
  return { numa, alignment: { sharedRoots, sharedNuma } };
}

function nicLine(n: NicHardware): string {
  const parts = [
    n.primary ? `(${n.ifName ?? n.busId})` : nicDeviceName(n),
    n.busId,
    n.model.key,
    n.ifName ?? '',
    n.model.rdma ? `rdma ${n.rdmaDevice ?? ''}`.trim() : '',
    n.speedGbps !== null ? `${n.speedGbps}G` : '',
    n.primary ? 'primary: carries the default route, not published' : '',
  ];
  return parts.filter(Boolean).join('  ');
}

/** A text tree a user reads top-down: NUMA node, root, devices; then what alignment can and cannot do. */
export function renderTopology(machine: Machine, t: Topology): string {
  const out: string[] = [];
  const numaCount = t.numa.filter((n) => n.numaNode >= 0).length;
  out.push(
    `${machine.profile} (node ${machine.nodeName}): ${machine.gpus.length} GPU(s), ${machine.nics.length} NIC(s), ${numaCount} NUMA node(s)`,
  );
  for (const n of t.numa) {
    out.push(n.numaNode >= 0 ? `NUMA ${n.numaNode}` : 'no NUMA node (numa_node -1)');
    n.roots.forEach((r, ri) => {
      const lastRoot = ri === n.roots.length - 1;
      out.push(`${lastRoot ? '└─' : '├─'} ${r.root ?? 'no PCIe root (vPCI)'}`);
      const lines = [
        ...r.gpus.map((g) => `gpu-${g.minor}  ${g.busId}  ${g.model.name}`),
        ...r.nics.map(nicLine),
      ];
      lines.forEach((l, li) => {
        out.push(`${lastRoot ? '   ' : '│  '}${li === lines.length - 1 ? '└─' : '├─'} ${l}`);
      });
    });
  }
  out.push('', 'GPU–NIC alignment (RDMA NICs that are published):');
  const { sharedRoots, sharedNuma } = t.alignment;
  if (sharedRoots.length > 0) {
    out.push(
      `  matchAttribute resource.kubernetes.io/pcieRoot: possible on ${sharedRoots.length} root(s): ` +
        sharedRoots.map((r) => `${r.root} (${r.gpus} GPU, ${r.rdmaNics} NIC)`).join(', '),
    );
  } else {
    out.push(
      '  matchAttribute resource.kubernetes.io/pcieRoot: impossible, no root holds both a GPU and an RDMA NIC',
    );
  }
  if (sharedNuma.length > 0) {
    out.push(
      `  NUMA: possible on ${sharedNuma.length} node(s): ` +
        sharedNuma.map((n) => `NUMA ${n.numaNode} (${n.gpus} GPU, ${n.rdmaNics} NIC)`).join(', '),
      '    GPUs publish resource.kubernetes.io/numaNode, NICs dra.net/numaNode: select both with CEL,',
      '    or run the plugin with --nic-numa-attribute standard to matchAttribute resource.kubernetes.io/numaNode',
    );
  } else {
    out.push('  NUMA: impossible, no NUMA node holds both a GPU and an RDMA NIC');
  }
  return `${out.join('\n')}\n`;
}
