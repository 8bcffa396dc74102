import type { GiProfile, GpuModel } from '../../model/catalog/types.js';
import { FakegpuError } from '../../errors.js';

/**
 * `nvidia-smi mig -lgip` and `-lgipp`, checked against the catalog's MIG profile table. `-lgip` prints
 * two `|`-framed rows per profile (GPU, `MIG <name>`, ID, Free/Total, memory GiB, P2P, SM, DEC, ENC; then
 * CE, JPEG, OFA) in tables 76 to 81 columns wide; `-lgipp` one line per profile:
 * `GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1` (`Placement :` when there is one start).
 */

/** One profile row: the catalog's `GiProfile` fields nvidia-smi prints, memory in its GiB. */
export type LgipRow = Pick<
  GiProfile,
  | 'name'
  | 'id'
  | 'instances'
  | 'multiprocessors'
  | 'decoders'
  | 'encoders'
  | 'copyEngines'
  | 'jpegEngines'
  | 'ofaEngines'
> & { gpu: number; memoryGiB: number };

export function parseLgip(text: string, source: string): LgipRow[] {
  const rows: LgipRow[] = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((line, i) => {
    const a =
      /^\|\s*(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+\d+\/(\d+)\s+([\d.]+)\s+\S+\s+(\d+)\s+(\d+)\s+(\d+)\s*\|$/.exec(
        line,
      );
    if (!a) return;
    const b = /^\|\s+(\d+)\s+(\d+)\s+(\d+)\s*\|$/.exec(lines[i + 1] ?? '');
    if (!b)
      throw new FakegpuError(source, `line ${i + 2}: expected the CE, JPEG and OFA row under ${a[2] ?? ''}`);
    const n = (s: string | undefined): number => Number(s);
    rows.push({
      gpu: n(a[1]),
      name: a[2] ?? '',
      id: n(a[3]),
      instances: n(a[4]),
      memoryGiB: n(a[5]),
      multiprocessors: n(a[6]),
      decoders: n(a[7]),
      encoders: n(a[8]),
      copyEngines: n(b[1]),
      jpegEngines: n(b[2]),
      ofaEngines: n(b[3]),
    });
  });
  if (rows.length === 0)
    throw new FakegpuError(source, 'no profile row; expected the table nvidia-smi mig -lgip prints');
  return rows;
}

export interface LgippRow {
  gpu: number;
  id: number;
  starts: number[];
  size: number;
}

export function parseLgipp(text: string, source: string): LgippRow[] {
  const rows: LgippRow[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m = /^GPU\s+(\d+)\s+Profile ID\s+(\d+)\s+Placements?\s*:\s*\{([\d,]*)\}:(\d+)\s*$/.exec(
      line.trim(),
    );
    if (!m) continue;
    rows.push({
      gpu: Number(m[1]),
      id: Number(m[2]),
      starts: (m[3] ?? '')
        .split(',')
        .filter((x) => x !== '')
        .map(Number),
      size: Number(m[4]),
    });
  }
  if (rows.length === 0)
    throw new FakegpuError(source, 'no placement line; expected the output of nvidia-smi mig -lgipp');
  return rows;
}

/** nvidia-smi rounds memory to hundredths of a GiB. */
const GIB_TOLERANCE_MIB = 6;

/**
 * What the node's tables say that the catalog does not, one line each; empty when every profile of the
 * GPU agrees in ID, instances, memory, SMs, engines and (on parts whose placements count memory slices)
 * placements.
 */
export function checkMigTables(
  model: GpuModel,
  gpu: number,
  lgip: readonly LgipRow[],
  lgipp: readonly LgippRow[],
  where: string,
): string[] {
  const out: string[] = [];
  const mig = model.mig;
  const mine = lgip.filter((r) => r.gpu === gpu);
  if (!mig) {
    if (mine.length > 0)
      out.push(`${where}: the node lists MIG profiles, but ${model.key} has no MIG in fakegpu's catalog`);
    return out;
  }
  for (const r of mine) {
    const p = mig.profiles.find((x) => x.name === r.name);
    if (!p) {
      out.push(`${where}: MIG profile ${r.name} (ID ${r.id}) is not in fakegpu's catalog for ${model.key}`);
      continue;
    }
    const differs = (what: string, node: number, catalog: number): void => {
      if (node !== catalog)
        out.push(
          `${where}: MIG profile ${r.name}: ${what} is ${node} on this node but ${catalog} in fakegpu's catalog`,
        );
    };
    differs('ID', r.id, p.id);
    differs('instances', r.instances, p.instances);
    differs('SMs', r.multiprocessors, p.multiprocessors);
    differs('decoders', r.decoders, p.decoders);
    differs('encoders', r.encoders, p.encoders);
    differs('copy engines', r.copyEngines, p.copyEngines);
    differs('JPEG engines', r.jpegEngines, p.jpegEngines);
    differs('OFA engines', r.ofaEngines, p.ofaEngines);
    if (Math.abs(r.memoryGiB * 1024 - p.memoryMiB) > GIB_TOLERANCE_MIB)
      out.push(
        `${where}: MIG profile ${r.name}: memory is ${r.memoryGiB} GiB on this node but ${p.memoryMiB} MiB in fakegpu's catalog`,
      );
    const placed = lgipp.find((x) => x.gpu === gpu && x.id === r.id);
    // Parts whose placement grid is not their memory slices (RTX PRO 6000: 12 units for 4 slices) are not compared.
    const grid = Math.max(
      0,
      ...lgipp.filter((x) => x.gpu === gpu).map((x) => Math.max(...x.starts) + x.size),
    );
    if (placed && grid === mig.memorySlices) {
      const seen = `{${placed.starts.join(',')}}:${placed.size}`;
      const catalog = `{${p.placements.join(',')}}:${p.placementSize}`;
      if (seen !== catalog)
        out.push(
          `${where}: MIG profile ${r.name}: placements are ${seen} on this node but ${catalog} in fakegpu's catalog`,
        );
    }
  }
  for (const p of mig.profiles)
    if (mine.length > 0 && !mine.some((r) => r.name === p.name))
      out.push(
        `${where}: fakegpu's catalog has MIG profile ${p.name} for ${model.key}, which this node does not list`,
      );
  return out;
}
