import { join } from 'node:path';
import { layout } from './config.js';
import { extraKwokStatus } from './kwok-controllers.js';
import { readPid } from './process.js';
import { componentsOf, readState, running } from './state.js';

export interface ComponentStatus {
  /** A component, or one of the KWOK controllers beyond the first (`kwok-1`, …). */
  name: string;
  pid: number | null;
  running: boolean;
  log: string;
}

export function clusterStatus(dir: string): ComponentStatus[] {
  const l = layout(dir);
  const live = running(l);
  const s = readState(l);
  return componentsOf(s).flatMap((name) => [
    { name, pid: readPid(l.run, name), running: live[name] !== null, log: join(l.logs, `${name}.log`) },
    ...(name === 'kwok' ? extraKwokStatus(l, s) : []),
  ]);
}
