import { DEFAULT_RELEASE, type DriverRelease, RELEASES } from '../../model/device/release.js';
import { FakegpuError, oneOf, show } from '../../errors.js';
import type { ResourceSlice } from '../../kube/types/resource.js';
import type { Semver } from '../../kube/types/version.js';
import { DRANET } from '../../model/nic/attributes.js';
import type { ResolvedProfile } from '../../model/profile/load.js';
import { renderSlices } from '../../model/render.js';
import { DRIVER_NAME } from '../../model/slice/build.js';
import { diffSlices, type DiffResult } from './diff.js';

/**
 * The releases whose slice names the capture's fit: 25.12 names slices `<node>-<driver>-…`, 0.4 and
 * later `<hex index>-<driver>-<node>-…`; the default release first, as the tie-breaker.
 */
function releasesByName(slices: readonly ResourceSlice[], node: string): DriverRelease[] {
  const all = [
    DEFAULT_RELEASE,
    ...(Object.keys(RELEASES) as DriverRelease[]).filter((r) => r !== DEFAULT_RELEASE),
  ];
  const names = slices.map((s) => s.metadata.name ?? s.metadata.generateName ?? '');
  const indexed = names.some((n) => /^[0-9a-f]{5}-/.test(n) && n.includes(`-${node}-`));
  const plain = names.some((n) => n.startsWith(`${node}-${DRIVER_NAME}-`));
  if (indexed === plain) return all;
  return all.filter((r) => RELEASES[r].indexedSliceNames === indexed);
}

/**
 * A captured node's slices against what fakegpu renders for the same node from a profile. What the
 * capture itself shows is taken from it: the node, whether the driver ran with dynamic MIG (counter
 * sets), whether NICs were published and with which NUMA keys; the NVIDIA driver release is the one
 * whose render comes closest, unless given.
 */

export interface CompareOptions {
  /** Default: the capture's only node. */
  node?: string | undefined;
  /** Default: each known release, the closest kept. */
  release?: DriverRelease | undefined;
  kubernetesVersion: Semver;
  ignore: ReadonlySet<string>;
}

export interface Comparison extends DiffResult {
  node: string;
  release: DriverRelease;
  dynamicMig: boolean;
  /** Drivers of the capture that were compared; the others are listed in `skipped`. */
  drivers: string[];
  skipped: string[];
}

const STANDARD_NUMA = 'resource.kubernetes.io/numaNode';

export function captureNode(slices: readonly ResourceSlice[], given: string | undefined): string {
  const nodes = [...new Set(slices.map((s) => s.spec.nodeName).filter((n): n is string => !!n))];
  if (given !== undefined) {
    if (!nodes.includes(given))
      throw new FakegpuError(
        '--node-name',
        `${show(given)} has no slice in the capture; its nodes: ${oneOf(nodes)}`,
      );
    return given;
  }
  const [only] = nodes;
  if (only === undefined || nodes.length > 1)
    throw new FakegpuError(
      '--node-name',
      nodes.length === 0
        ? 'the capture has no slice with spec.nodeName; name the node'
        : `the capture has slices of ${nodes.length} nodes (${oneOf(nodes)}); name one`,
    );
  return only;
}

export function compareNode(
  profile: ResolvedProfile,
  captured: readonly ResourceSlice[],
  opts: CompareOptions,
): Comparison {
  const node = captureNode(captured, opts.node);
  const mine = captured.filter((s) => s.spec.nodeName === node);
  const drivers = [...new Set(mine.map((s) => s.spec.driver))];
  const known: string[] = drivers.filter((d) => d === DRIVER_NAME || d === DRANET);
  if (!known.includes(DRIVER_NAME))
    throw new FakegpuError(
      '--capture',
      `node ${show(node)} has no ${DRIVER_NAME} slice (drivers: ${oneOf(drivers)}); fakegpu renders ${DRIVER_NAME} and ${DRANET}`,
    );
  const compared = mine.filter((s) => known.includes(s.spec.driver));
  const gpuSlices = compared.filter((s) => s.spec.driver === DRIVER_NAME);
  const nicSlices = compared.filter((s) => s.spec.driver === DRANET);
  const counters = gpuSlices.some((s) => (s.spec.sharedCounters ?? []).length > 0);
  const standardNumaNode = nicSlices.some((s) =>
    (s.spec.devices ?? []).some((d) => d.attributes?.[STANDARD_NUMA] !== undefined),
  );
  const render = (release: DriverRelease, dynamicMig: boolean): ResourceSlice[] =>
    renderSlices(profile, {
      nodeName: node,
      dynamicMig,
      driverName: DRIVER_NAME,
      kubernetesVersion: opts.kubernetesVersion,
      release,
      nics: nicSlices.length > 0 ? { driverName: DRANET, standardNumaNode } : undefined,
    }).items;
  const releases: DriverRelease[] =
    opts.release !== undefined ? [opts.release] : releasesByName(gpuSlices, node);
  // Counter sets say dynamic MIG; without them a node whose GPUs have no MIG may still run it (one
  // slice per GPU), so both are tried.
  const modes = counters ? [true] : [false, true];
  let best: { release: DriverRelease; dynamicMig: boolean; result: DiffResult } | undefined;
  let refused: unknown;
  for (const release of releases)
    for (const dynamicMig of modes) {
      let rendered: ResourceSlice[];
      try {
        rendered = render(release, dynamicMig);
      } catch (e) {
        // A profile that cannot run this way (a static MIG layout under dynamic MIG) is not a candidate.
        if (!(e instanceof FakegpuError)) throw e;
        refused ??= e;
        continue;
      }
      const result = diffSlices(compared, rendered, opts.ignore);
      if (best === undefined || result.differences.length < best.result.differences.length)
        best = { release, dynamicMig, result };
    }
  if (best === undefined) throw refused;
  const { dynamicMig } = best;
  return {
    ...best.result,
    node,
    release: best.release,
    dynamicMig,
    drivers: known,
    skipped: drivers.filter((d) => !known.includes(d)),
  };
}
