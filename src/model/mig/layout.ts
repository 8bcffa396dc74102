import { findGiProfile } from '../catalog/index.js';
import type { GpuModel } from '../catalog/types.js';
import { FakegpuError, show } from '../../errors.js';
import { firstFit, refusal, type Placed } from './placement.js';

interface LayoutItem {
  profile: string;
  start: number | null;
  count: number;
}

const ITEM = /^([0-9]+[gc][.0-9a-z+\-.]*?)\s*(?:@\s*(\d+))?\s*(?:[x×*]\s*(\d+))?$/i;

/**
 * Parses a MIG layout as users write it: `1g.10gb x7`, `3g.40gb@0, 2g.20gb@4, 1g.10gb@6`, or a list of
 * such items. Items without `@start` take the first free placement after all pinned items are placed.
 */
export function parseLayout(spec: string | readonly string[], field: string): LayoutItem[] {
  const parts = (typeof spec === 'string' ? [spec] : spec).flatMap((s) => s.split(','));
  const items: LayoutItem[] = [];
  parts.forEach((raw, i) => {
    const text = raw.trim();
    if (text === '') return;
    const m = ITEM.exec(text);
    if (!m) {
      throw new FakegpuError(
        field,
        `item ${i + 1} ${show(text)} is not a MIG layout item; expected <profile>[@<start>][ x<count>], e.g. "1g.10gb x7" or "3g.40gb@4"`,
      );
    }
    const start = m[2] === undefined ? null : Number(m[2]);
    const count = m[3] === undefined ? 1 : Number(m[3]);
    if (count < 1)
      throw new FakegpuError(field, `item ${show(text)} has count ${count}; the count must be at least 1`);
    if (start !== null && count > 1) {
      throw new FakegpuError(
        field,
        `item ${show(text)} pins a placement and asks for ${count} instances; pin each instance separately`,
      );
    }
    items.push({ profile: m[1] ?? '', start, count });
  });
  return items;
}

/** Places a layout on a GPU of `model` exactly as the hardware would accept it, or explains the conflict. */
export function placeLayout(model: GpuModel, spec: string | readonly string[], field: string): Placed[] {
  const items = parseLayout(spec, field);
  const placed: Placed[] = [];
  const pinned = items.filter((it) => it.start !== null);
  const floating = items.filter((it) => it.start === null);
  for (const it of pinned) {
    const profile = findGiProfile(model, it.profile, field);
    const candidate = { profile, start: it.start ?? 0 };
    const why = refusal(model, placed, candidate);
    if (why) throw new FakegpuError(field, `${model.key}: ${why}`);
    placed.push(candidate);
  }
  for (const it of floating) {
    const profile = findGiProfile(model, it.profile, field);
    for (let n = 1; n <= it.count; n++) {
      const p = firstFit(model, placed, profile);
      if (!p) {
        const taken = placed.map((x) => `${x.profile.name}@${x.start}`).join(', ');
        throw new FakegpuError(
          field,
          `${model.key}: no free placement for ${profile.name} (instance ${n} of ${it.count}); already placed: ${taken || 'nothing'}; valid starts: ${profile.placements.join(', ')}`,
        );
      }
      placed.push(p);
    }
  }
  return placed.sort((a, b) => a.start - b.start || a.profile.id - b.profile.id);
}
