import { isAbsolute, relative, resolve } from 'node:path';

/**
 * Paths built from what the kubelet or a user sent: every one is checked to stay under its root, so a
 * claim UID such as `../../x` or an empty one can never name a folder outside the plugin's own.
 */
export function under(root: string, ...parts: string[]): string {
  const base = resolve(root);
  const path = resolve(base, ...parts);
  const rel = relative(base, path);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel))
    throw new RangeError(`${JSON.stringify(parts.join('/'))} is not a path under ${base}`);
  return path;
}
