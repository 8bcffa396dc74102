import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { kwokArgs } from '../../src/local-cluster/components.js';
import { layout } from '../../src/local-cluster/config.js';
import {
  extraKwokPidNames,
  extraKwokStatus,
  startExtraKwokControllers,
  stopExtraKwokControllers,
} from '../../src/local-cluster/kwok-controllers.js';
import { KWOK_PARTITION_LABEL, partitioned } from '../../src/local-cluster/kwok-partition.js';
import { isAlive, readPid } from '../../src/local-cluster/process.js';
import type { State } from '../../src/local-cluster/state.js';

/** `cluster up --kwok-controllers K`: which node each KWOK controller manages, and its processes. */

const dir = mkdtempSync(join(tmpdir(), 'fakegpu-kwok-partition-'));
after(() => {
  rmSync(dir, { recursive: true, force: true });
});
const l = layout(dir);

const state = (kwokControllers?: number): State => ({
  nodeName: 'n',
  bin: '/b',
  cniBin: '/c',
  profile: null,
  dynamicMig: false,
  kwokNodes: 6,
  ...(kwokControllers === undefined ? {} : { kwokControllers }),
});

const selectors = (args: string[]): string[] =>
  args.filter((a) => a.startsWith('--manage-nodes-with-label-selector='));

describe('KWOK partitions', () => {
  it('puts node i in partition i mod K, keeping its other labels; one controller labels nothing', () => {
    const nodes = Array.from({ length: 5 }, (_, i) => ({ name: `n${i}`, labels: { pool: 'a' } }));
    assert.deepEqual(
      partitioned(nodes, 2).map((n) => n.labels),
      ['0', '1', '0', '1', '0'].map((p) => ({ pool: 'a', [KWOK_PARTITION_LABEL]: p })),
    );
    assert.deepEqual(
      partitioned(nodes, 1).map((n) => n.labels),
      nodes.map(() => ({ pool: 'a' })),
    );
  });

  it("narrows each controller to its partition beside KWOK's annotation; one controller as before", () => {
    assert.deepEqual(selectors(kwokArgs(l, 0, 3)), [
      `--manage-nodes-with-label-selector=${KWOK_PARTITION_LABEL}=0`,
    ]);
    assert.deepEqual(selectors(kwokArgs(l, 2, 3)), [
      `--manage-nodes-with-label-selector=${KWOK_PARTITION_LABEL}=2`,
    ]);
    assert.deepEqual(selectors(kwokArgs(l, 0, 1)), []);
    assert.ok(kwokArgs(l, 2, 3).includes('--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake'));
    // A port of their own would collide between K processes on one host.
    for (const a of kwokArgs(l, 1, 3)) assert.doesNotMatch(a, /^--(server-address|node-port)/);
  });

  it('asks every controller for no node leases, which KWOK would renew every 10 s per node', () => {
    for (const [p, k] of [
      [0, 1],
      [2, 3],
    ] as const)
      assert.ok(kwokArgs(l, p, k).includes('--node-lease-duration-seconds=0'), `controller ${p} of ${k}`);
  });
});

describe('the extra KWOK controllers as processes', () => {
  const leftovers: number[] = [];
  // Where stopping failed, the stand-ins (and their sleeps, in their sessions) must not outlive the test.
  after(() => {
    for (const pid of leftovers)
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // Stopped, as they should be.
      }
  });
  // A stand-in for KWOK that runs until stopped whatever its arguments, which name its partition.
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'kwok'), '#!/bin/sh\nsleep 600\n', { mode: 0o755 });

  it('starts K-1 of them beside the component, shows them in status, and stops every one a pid file names', async () => {
    const started = startExtraKwokControllers(l, { bin, cniBin: bin }, state(3), () => undefined);
    assert.deepEqual(
      started.map((s) => s.name),
      ['kwok-1', 'kwok-2'],
    );
    assert.deepEqual(extraKwokPidNames(l), ['kwok-1', 'kwok-2']);
    assert.deepEqual(
      extraKwokStatus(l, state(3)).map((c) => [c.name, c.running]),
      [
        ['kwok-1', true],
        ['kwok-2', true],
      ],
    );
    assert.deepEqual(extraKwokStatus(l, state()), [], 'one controller: nothing beyond the component');
    const pids = started.map((s) => s.pid);
    leftovers.push(...pids);
    const left = await stopExtraKwokControllers(l, () => undefined);
    assert.deepEqual(left, []);
    for (const pid of pids) assert.equal(isAlive(pid), false, `pid ${pid} stopped`);
    assert.equal(readPid(l.run, 'kwok-1'), null, 'pid file forgotten');
    assert.deepEqual(extraKwokPidNames(l), []);
  });

  it('starts none with one controller', () => {
    assert.deepEqual(
      startExtraKwokControllers(l, { bin, cniBin: bin }, state(1), () => undefined),
      [],
    );
  });
});
