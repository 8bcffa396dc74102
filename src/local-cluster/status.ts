import { join } from 'node:path';
import { layout } from './config.js';
import { readPid } from './process.js';
import { componentsOf, readState, running, type ComponentName } from './state.js';

export interface ComponentStatus {
  name: ComponentName;
  pid: number | null;
  running: boolean;
  log: string;
}

export function clusterStatus(dir: string): ComponentStatus[] {
  const l = layout(dir);
  const live = running(l);
  return componentsOf(readState(l)).map((name) => ({
    name,
    pid: readPid(l.run, name),
    running: live[name] !== null,
    log: join(l.logs, `${name}.log`),
  }));
}
