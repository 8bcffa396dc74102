import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { dial, invoke, watch } from '../../src/node/kubelet/client.js';
import { REGISTRATION, startServers, type RunningServers } from '../../src/node/kubelet/grpc.js';
import {
  HEALTH_V1,
  HEALTH_V1ALPHA1,
  healthService,
  truncateMessage,
  type DeviceHealthReport,
  type HealthSource,
} from '../../src/node/kubelet/health.js';

/**
 * The device health stream (KEP-4680) as the kubelet sees it: a client from the same .proto files on
 * the real DRA socket, for both versions the kubelet may pick.
 */

const VERSIONS = [
  ['v1', 'dra-health-v1.proto', HEALTH_V1],
  ['v1alpha1', 'dra-health-v1alpha1.proto', HEALTH_V1ALPHA1],
] as const;

/** As the proto loader decodes it: enums by name, int64 as decimal strings, zero values present. */
interface WireDevice {
  device: { poolName: string; deviceName: string };
  health: string;
  lastUpdatedTime: string;
  healthCheckTimeoutSeconds: string;
  message: string;
}
interface Wire {
  devices: WireDevice[];
}

class FakeSource implements HealthSource {
  readonly listeners = new Set<() => void>();
  notified = 0;
  constructor(private reports: DeviceHealthReport[]) {}
  current(): DeviceHealthReport[] {
    return this.reports.map((r) => ({ ...r }));
  }
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
  set(reports: DeviceHealthReport[]): void {
    this.reports = reports;
    this.notified++;
    for (const l of [...this.listeners]) l();
  }
}

const REPORTS: DeviceHealthReport[] = [
  { poolName: 'node-1', deviceName: 'gpu-0', health: 'Healthy', message: '' },
  {
    poolName: 'node-1',
    deviceName: 'gpu-1',
    health: 'Unhealthy',
    message: 'critical XID 79 reported by NVML',
    timeoutSeconds: 60,
  },
  { poolName: 'node-1', deviceName: 'gpu-2', health: 'Unknown', message: 'device health is not monitored' },
];

/** The messages of one stream in order, and how it ended. */
class Reader {
  private readonly queue: Wire[] = [];
  private readonly waiters: ((w: Wire) => void)[] = [];
  readonly status: Promise<grpc.StatusObject>;
  constructor(readonly call: grpc.ClientReadableStream<unknown>) {
    call.on('data', (d: Wire) => {
      const w = this.waiters.shift();
      if (w) w(d);
      else this.queue.push(d);
    });
    // The status event carries errors too; without a listener an error status would throw.
    call.on('error', () => undefined);
    this.status = new Promise((resolve) => call.on('status', resolve));
  }
  next(ms = 2000): Promise<Wire> {
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`no message within ${ms} ms`));
      }, ms);
      const waiter = (w: Wire): void => {
        clearTimeout(timer);
        resolve(w);
      };
      this.waiters.push(waiter);
    });
  }
}

function open(servers: RunningServers, file: string, path: readonly string[]): Reader {
  const c = dial(file, path, servers.draSocket);
  const r = new Reader(watch(c, 'NodeWatchResources', {}));
  void r.status.then(() => {
    c.close();
  });
  return r;
}

/** What the kubelet should read for these reports, leaving out the timestamp. */
function expected(reports: DeviceHealthReport[]): Omit<WireDevice, 'lastUpdatedTime'>[] {
  return reports.map((r) => ({
    device: { poolName: r.poolName, deviceName: r.deviceName },
    health: r.health.toUpperCase(),
    healthCheckTimeoutSeconds: String(r.timeoutSeconds ?? 0),
    message: r.message,
  }));
}

function untimed(w: Wire): Omit<WireDevice, 'lastUpdatedTime'>[] {
  return w.devices.map(({ lastUpdatedTime: _, ...d }) => d);
}

async function until(what: string, cond: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`still not ${what} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const TIMEOUT = Symbol('timeout');

/** The promise's value, or TIMEOUT when it takes longer than `ms`. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | typeof TIMEOUT> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<typeof TIMEOUT>((r) => (timer = setTimeout(r, ms, TIMEOUT)))]);
  } finally {
    clearTimeout(timer);
  }
}

const unixNow = (): number => Math.floor(Date.now() / 1000);

function start(dir: string, extra: { health?: HealthSource; healthHeartbeatMs?: number }) {
  return startServers(
    {
      driverName: 'gpu.nvidia.com',
      pluginsDir: join(dir, 'plugins'),
      registrarDir: join(dir, 'registry'),
      onRegistration: () => undefined,
      ...extra,
    },
    {
      prepare: () => Promise.resolve({ claims: {} }),
      unprepare: () => Promise.resolve({ claims: {} }),
    },
  );
}

async function supportedVersions(servers: RunningServers): Promise<unknown> {
  const reg = dial('pluginregistration.proto', REGISTRATION, servers.registrationSocket);
  const info = (await invoke(reg, 'GetInfo', {})) as { supportedVersions: string[] };
  reg.close();
  return info.supportedVersions;
}

describe('device health stream (KEP-4680)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-health-'));
  const source = new FakeSource(REPORTS);
  let servers: RunningServers;
  before(async () => {
    // No beat within a test: every message seen here comes from the open or from a change.
    servers = await start(dir, { health: source, healthHeartbeatMs: 60_000 });
  });
  after(async () => {
    await servers.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('advertises both health versions after the DRA services, v1 first', async () => {
    assert.deepEqual(await supportedVersions(servers), [
      'v1.DRAPlugin',
      'v1beta1.DRAPlugin',
      'v1.DRAResourceHealth',
      'v1alpha1.DRAResourceHealth',
    ]);
  });

  for (const [version, file, path] of VERSIONS) {
    it(`sends the complete list at once and on every change, and lets go on cancel (${version})`, async () => {
      source.set(REPORTS);
      const from = unixNow();
      const r = open(servers, file, path);
      const first = await r.next();
      assert.deepEqual(untimed(first), expected(REPORTS));
      for (const d of first.devices) {
        const t = Number(d.lastUpdatedTime);
        assert.ok(t >= from && t <= unixNow(), `lastUpdatedTime ${t} is now in unix seconds`);
      }
      assert.equal(source.listeners.size, 1);

      const changed: DeviceHealthReport[] = [
        { poolName: 'node-1', deviceName: 'gpu-0', health: 'Unhealthy', message: 'GPU is lost' },
        ...REPORTS.slice(1),
      ];
      source.set(changed);
      assert.deepEqual(untimed(await r.next()), expected(changed));

      r.call.cancel();
      assert.equal((await r.status).code, grpc.status.CANCELLED);
      await until('unsubscribed', () => source.listeners.size === 0);
    });
  }

  it('cuts messages over 1024 bytes to 1021 and "..." as the kubelet does', async () => {
    source.set([
      { poolName: 'node-1', deviceName: 'gpu-0', health: 'Unhealthy', message: 'x'.repeat(2000) },
      { poolName: 'node-1', deviceName: 'gpu-1', health: 'Healthy', message: 'y'.repeat(1024) },
    ]);
    const r = open(servers, 'dra-health-v1.proto', HEALTH_V1);
    const [long, edge] = (await r.next()).devices;
    assert.equal(long?.message, `${'x'.repeat(1021)}...`);
    assert.equal(edge?.message, 'y'.repeat(1024));
    r.call.cancel();
    await r.status;
    await until('unsubscribed', () => source.listeners.size === 0);
  });

  it('refreshes a device with a short staleness timeout within it, whatever the beat', async () => {
    source.set([
      { poolName: 'node-1', deviceName: 'gpu-0', health: 'Healthy', message: '', timeoutSeconds: 1 },
    ]);
    const notified = source.notified;
    const r = open(servers, 'dra-health-v1.proto', HEALTH_V1);
    const first = await r.next();
    assert.equal(first.devices[0]?.healthCheckTimeoutSeconds, '1');
    const t0 = Date.now();
    const second = await r.next(1500);
    assert.ok(Date.now() - t0 < 1000, 'within the 1 s timeout');
    assert.deepEqual(untimed(second), untimed(first));
    assert.equal(source.notified, notified, 'no change drove it');
    r.call.cancel();
    await r.status;
    await until('unsubscribed', () => source.listeners.size === 0);
  });
});

describe('device health heartbeat', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-health-beat-'));
  const source = new FakeSource(REPORTS);
  let servers: RunningServers;
  before(async () => {
    servers = await start(dir, { health: source, healthHeartbeatMs: 100 });
  });
  after(async () => {
    await servers.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const [version, file, path] of VERSIONS)
    it(`re-sends the complete list every heartbeatMs with no change (${version})`, async () => {
      // From the open, not from the first answer: a loaded machine that delivers the first late must not
      // make the beats after it look early.
      const t0 = Date.now();
      const r = open(servers, file, path);
      const first = await r.next();
      const second = await r.next();
      const third = await r.next();
      // Timers may fire a little early; the beat is still far from immediate.
      assert.ok(Date.now() - t0 >= 150, 'two beats take two intervals');
      assert.deepEqual(untimed(first), expected(REPORTS));
      assert.deepEqual(untimed(second), expected(REPORTS));
      assert.deepEqual(untimed(third), expected(REPORTS));
      assert.equal(source.notified, 0);
      r.call.cancel();
      await r.status;
      await until('unsubscribed', () => source.listeners.size === 0);
    });
});

describe('device health absent', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-health-off-'));
  let servers: RunningServers;
  before(async () => {
    servers = await start(dir, {});
  });
  after(async () => {
    await servers.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('advertises only the DRA services', async () => {
    assert.deepEqual(await supportedVersions(servers), ['v1.DRAPlugin', 'v1beta1.DRAPlugin']);
  });

  for (const [version, file, path] of VERSIONS)
    it(`answers NodeWatchResources with UNIMPLEMENTED (${version})`, async () => {
      const r = open(servers, file, path);
      assert.equal((await r.status).code, grpc.status.UNIMPLEMENTED);
    });
});

describe('device health at server stop', () => {
  it('ends open streams with OK, unsubscribes, and lets the server shut down', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fakegpu-health-stop-'));
    const source = new FakeSource(REPORTS);
    const servers = await start(dir, { health: source, healthHeartbeatMs: 60_000 });
    const readers = VERSIONS.map(([, file, path]) => open(servers, file, path));
    let stopped = false;
    try {
      for (const r of readers) await r.next();
      assert.equal(source.listeners.size, 2);
      stopped = (await within(servers.stop(), 5000)) !== TIMEOUT;
      assert.ok(stopped, 'stop() returned while streams were open');
      for (const r of readers) assert.equal((await r.status).code, grpc.status.OK);
      assert.equal(source.listeners.size, 0);
    } finally {
      // Cancelled from this side, the streams no longer hold the shutdown, so a failure does not hang.
      for (const r of readers) r.call.cancel();
      if (!stopped) await servers.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('device health source failing', () => {
  it('ends the stream with INTERNAL and lets go of the source', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fakegpu-health-fail-'));
    const source = new FakeSource(REPORTS);
    let fail = false;
    const failing: HealthSource = {
      current: () => {
        if (fail) throw new Error('NVML went away');
        return source.current();
      },
      subscribe: (l) => source.subscribe(l),
    };
    const servers = await start(dir, { health: failing, healthHeartbeatMs: 60_000 });
    const r = open(servers, 'dra-health-v1.proto', HEALTH_V1);
    try {
      await r.next();
      fail = true;
      source.set(REPORTS);
      const status = await within(r.status, 2000);
      assert.ok(status !== TIMEOUT, 'the stream ended');
      assert.equal(status.code, grpc.status.INTERNAL);
      assert.match(status.details, /NVML went away/);
      assert.equal(source.listeners.size, 0);
    } finally {
      r.call.cancel();
      await servers.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('health message and options', () => {
  it('cuts by bytes and never splits a character', () => {
    const cut = truncateMessage('é'.repeat(600)); // 1200 bytes
    assert.ok(Buffer.byteLength(cut) <= 1024);
    assert.ok(cut.endsWith('...'));
    assert.equal(cut, `${'é'.repeat(510)}...`);
    assert.equal(truncateMessage('é'.repeat(512)), 'é'.repeat(512));
  });

  it('refuses a heartbeat that is not a positive number of milliseconds', () => {
    const source = new FakeSource([]);
    assert.throws(() => healthService(source, { heartbeatMs: 0 }), /heartbeatMs/);
    assert.throws(() => healthService(source, { heartbeatMs: Number.NaN }), /heartbeatMs/);
  });
});
