import { pino } from 'pino';
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';
import { Fleet, type FleetOptions } from '../../src/fleet/fleet.js';
import { PooledKubeConfig } from '../../src/kube/client.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import type { FakeApi } from './fake-api.js';

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
