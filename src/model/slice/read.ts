import { FakegpuError, show } from '../../errors.js';
import { isDnsSubdomain, isDriverName } from '../../kube/types/names.js';
import type { ResourceSlice } from '../../kube/types/resource.js';
import { LIMITS } from '../../kube/types/limits.js';
import { parseListItems } from '../profile/load.js';

/**
 * ResourceSlices as a user saves them: `kubectl get resourceslices -o yaml` (a List), a
 * ResourceSliceList, or one slice per YAML document. `field` names the input in messages.
 */
export function readSlices(text: string, source: string, field: string): ResourceSlice[] {
  const items = parseListItems(text, field, 'ResourceSliceList') as Partial<ResourceSlice>[];
  if (items.length === 0) throw new FakegpuError(field, `${source} holds no ResourceSlice`);
  items.forEach((s, i) => {
    if (s.kind !== 'ResourceSlice' || typeof s.spec?.driver !== 'string')
      throw new FakegpuError(
        field,
        `${source}: item ${i} is ${s.kind ? `a ${s.kind}` : 'an object without kind'}${s.kind === 'ResourceSlice' ? ' without spec.driver' : ''}, not a ResourceSlice`,
      );
    checkSlice(s as ResourceSlice, `${source}: item ${i}`, field);
  });
  return items as ResourceSlice[];
}

/** More devices in one slice than the API allows cannot be a real capture. */
function checkSlice(s: ResourceSlice, where: string, field: string): void {
  const count = Array.isArray(s.spec.devices) ? s.spec.devices.length : 0;
  if (count > LIMITS.devicesPerSlice)
    throw new FakegpuError(
      field,
      `${where}: ${count} devices; the API allows at most ${LIMITS.devicesPerSlice} in one slice`,
    );
}

/**
 * Node and driver names as the API server has them: a capture names files after them, so one that is
 * not (`../../x`) is refused rather than written outside the output folder.
 */
export function checkSliceNames(slices: readonly ResourceSlice[], source: string, field: string): void {
  slices.forEach((s, i) => {
    const where = `${source}: item ${i}`;
    const nodeName: unknown = s.spec.nodeName;
    if (!isDriverName(s.spec.driver))
      throw new FakegpuError(
        field,
        `${where}: spec.driver ${show(s.spec.driver)} is not a DRA driver name (a DNS subdomain)`,
      );
    if (nodeName !== undefined && (typeof nodeName !== 'string' || !isDnsSubdomain(nodeName)))
      throw new FakegpuError(
        field,
        `${where}: spec.nodeName ${show(nodeName)} is not a node name (a DNS subdomain)`,
      );
  });
}
