import { pino } from 'pino';
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';
import { Fleet, type FleetOptions } from '../../src/fleet/fleet.js';
import { PooledKubeConfig } from '../../src/kube/client.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import { FakeApi } from './fake-api.js';
import { until } from './http.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import type { GatedField } from '../../src/kube/publish/gates.js';
import type { Device } from '../../src/kube/types/resource.js';

/** What the tests' fleets serve and how fast: DGX H100 by default, no rate limit, silent. */
export const SERVED = {
  profileLabel: 'fakegpu.dev/profile',
  defaultProfile: 'dgx-h100',
  dynamicMig: false,
  driverName: DRIVER_NAME,
  release: DEFAULT_RELEASE,
  concurrency: 2,
  qps: 0,
  burst: 1,
  log: pino({ level: 'silent' }),
} satisfies Partial<FleetOptions>;

/**
 * The fleet against an in-memory API server, as the unit tests run it: DGX H100 by default, no rate
 * limit, silent, and every backoff drawing 0 so retries come at once and tests wait on behaviour.
 */
export function testFleet(api: FakeApi, o: Partial<FleetOptions> = {}): Fleet {
  return new Fleet(new PooledKubeConfig(1), {
    ...SERVED,
    api,
    random: () => 0,
    ...o,
  });
}

/**
 * One KWOK node served by a test fleet with these options, the server dropping `drops` (its gates off):
 * the devices published once converged. The fleet goes into `fleets`, for the caller to stop.
 */
export async function servedDevices(
  fleets: Fleet[],
  o: Partial<FleetOptions>,
  drops: readonly GatedField[] = [],
): Promise<Device[]> {
  const api = new FakeApi();
  api.drops = new Set(drops);
  api.putNode('node-0', {}, { [KWOK_ANNOTATION]: 'fake' });
  const f = testFleet(api, o);
  fleets.push(f);
  await f.start();
  await until('converged', () => f.converged() && api.slices.size > 0);
  return [...api.slices.values()].flatMap((s) => s.spec.devices ?? []);
}
