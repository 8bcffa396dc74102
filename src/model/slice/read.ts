import { FakegpuError } from '../../errors.js';
import type { ResourceSlice } from '../../kube/types/resource.js';
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
  });
  return items as ResourceSlice[];
}
