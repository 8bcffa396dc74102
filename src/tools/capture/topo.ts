import { FakegpuError, show } from '../../errors.js';

/**
 * `nvidia-smi topo -m`: the matrix of GPUs and NICs, then `CPU Affinity`, `NUMA Affinity` and (from R535)
 * `GPU NUMA ID`. Cells are tab-separated in the real output, runs of spaces once pasted; the self cell is
 * ` X `, a row may carry an empty cell before `GPU NUMA ID`, and newer drivers underline the header with
 * ANSI escapes. Older drivers name NIC columns by RDMA device (`mlx5_0`) instead of `NIC0` and a legend.
 */

export interface Topo {
  /** GPU index (GPU<n>, nvidia-smi's order) → the NUMA node, where `NUMA Affinity` is one node. */
  gpuNuma: Map<number, number>;
  /** `NIC0` → `mlx5_0`, from the NIC legend or the column names themselves. */
  nics: Map<string, string>;
  /** GPU index → NIC column name → link (`PIX`, `PXB`, `PHB`, `NODE`, `SYS`). */
  links: Map<number, Map<string, string>>;
  /** Why some GPU's NUMA node is not taken (e.g. a list of nodes on Grace). */
  notes: string[];
}

// eslint-disable-next-line no-control-regex -- ANSI escapes are what is stripped.
const ANSI = /\u001b\[[0-9;]*m/g;

export function parseTopo(text: string, source: string): Topo {
  const lines = text.replace(ANSI, '').split(/\r?\n/);
  const headerAt = lines.findIndex((l) => /(^|\s)GPU0(\s|$)/.test(l) && /CPU Affinity/.test(l));
  if (headerAt < 0)
    throw new FakegpuError(
      source,
      'no matrix header (a line with GPU0 … CPU Affinity); expected the output of nvidia-smi topo -m',
    );
  const header = (lines[headerAt] ?? '').trim().split(/\s+/);
  const cpuAt = header.indexOf('CPU');
  const columns = header.slice(0, cpuAt);
  const topo: Topo = { gpuNuma: new Map(), nics: new Map(), links: new Map(), notes: [] };
  for (const c of columns) if (!/^GPU\d+$/.test(c) && !/^NIC\d+$/.test(c)) topo.nics.set(c, c);
  for (const line of lines.slice(headerAt + 1)) {
    if (line.trim() === '') break;
    const cells = line.trim().split(/\s+/);
    const m = /^GPU(\d+)$/.exec(cells[0] ?? '');
    if (!m) continue;
    const gpu = Number(m[1]);
    const links = new Map<string, string>();
    columns.forEach((c, i) => {
      if (!/^GPU\d+$/.test(c)) links.set(c, cells[i + 1] ?? '');
    });
    topo.links.set(gpu, links);
    const numa = cells[columns.length + 2];
    if (numa === undefined || numa === 'N/A') continue;
    if (/^\d+$/.test(numa)) topo.gpuNuma.set(gpu, Number(numa));
    else
      topo.notes.push(
        `${source}: GPU${gpu}'s NUMA Affinity is ${show(numa)}, not one node (Grace lists its memory nodes); give lspci -D -vmm or the sysfs links for the GPU's own NUMA node`,
      );
  }
  for (const line of lines) {
    const l = /^\s*(NIC\d+):\s*(\S+)\s*$/.exec(line);
    if (l?.[1] !== undefined && l[2] !== undefined) topo.nics.set(l[1], l[2]);
  }
  if (topo.links.size === 0) throw new FakegpuError(source, 'the matrix has no GPU row');
  return topo;
}
