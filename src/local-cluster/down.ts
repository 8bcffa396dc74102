import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { FakegpuError } from '../errors.js';
import { layout } from './config.js';
import { cleanUpHost } from './host.js';
import { isAlive, pidsMentioning, readPid } from './process.js';
import { COMPONENT_ORDER, readState } from './state.js';
import { stopAndFree, stopComponent } from './stop.js';
import { stopFleetReplicas } from './fleet-process.js';
import { stopExtraKwokControllers } from './kwok-controllers.js';
import { refuseUntrustedToolchain } from './trust.js';

export interface DownOptions {
  dir: string;
  purge: boolean;
  log: (line: string) => void;
}

/**
 * Stops every process the cluster started and waits until they have exited and their ports are
 * closed; unmounts what it mounted and removes its bridge.
 */
/**
 * crictl runs as root from the cluster's binaries only where they are root's alone; otherwise `down` still
 * stops everything, leaving the pods' removal to containerd's stop.
 */
function podsRemovable(bin: string, log: (line: string) => void): boolean {
  try {
    refuseUntrustedToolchain({ bin, cniBin: bin });
    return true;
  } catch (e) {
    log(`not removing pods with crictl: ${e instanceof Error ? e.message : String(e)}`);
    return false;
  }
}

export async function clusterDown(o: DownOptions): Promise<void> {
  const l = layout(o.dir);
  const state = readState(l);
  const left: string[] = [];
  // The plugin deregisters while the kubelet still runs; then pods go while the runtime still runs, so
  // their shims, mounts and veths go with them.
  for (const name of [
    'karpenter',
    'kueue',
    'fakegpu-plugin',
    'fakegpu-fleet',
    'fakegpu-compute-domain-controller',
    'kubelet',
  ] as const)
    left.push(...(await stopComponent(l, name, o.log)));
  left.push(...(await stopFleetReplicas(l, o.log)));
  const containerdPid = readPid(l.run, 'containerd');
  if (state && containerdPid !== null && isAlive(containerdPid) && podsRemovable(state.bin, o.log)) {
    spawnSync(
      join(state.bin, 'crictl'),
      ['--runtime-endpoint', `unix://${l.containerdSock}`, 'rmp', '--all', '--force'],
      { encoding: 'utf8', timeout: 60_000 },
    );
  }
  for (const name of [...COMPONENT_ORDER].reverse()) {
    if (name === 'kwok') left.push(...(await stopExtraKwokControllers(l, o.log)));
    left.push(...(await stopComponent(l, name, o.log)));
  }
  // Shims outlive containerd by design; each takes its containers with it.
  for (const pid of pidsMentioning(l.containerdSock))
    left.push(...(await stopAndFree('containerd shim', pid, 2000)));
  cleanUpHost(l.dir);
  if (left.length > 0) throw new FakegpuError('cluster down', left.join('; '));
  if (o.purge) {
    rmSync(l.dir, { recursive: true, force: true });
    o.log(`removed ${l.dir}`);
  }
}
