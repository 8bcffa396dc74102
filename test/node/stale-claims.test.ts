import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import {
  releaseStaleClaims,
  sweepStaleClaims,
  type ClaimLookup,
} from '../../src/node/plugin/stale-claims.js';
import { gpuClaim, nodeState } from '../support/node-state.js';

/**
 * Claims a checkpoint holds that the API server no longer has: the plugin unprepares them itself, so
 * that their devices are free for the claims the kubelet brings next.
 */

const log = pino({ level: 'silent' });

/** The API server's claims by `namespace/name`, and names whose lookup fails. */
function apiServer(
  claims: Record<string, string>,
  failing: string[] = [],
): ClaimLookup & { asked: string[] } {
  const asked: string[] = [];
  const lookup = (namespace: string, name: string): Promise<string | null> => {
    const key = `${namespace}/${name}`;
    asked.push(key);
    if (failing.includes(key)) return Promise.reject(new Error('connect ECONNREFUSED'));
    return Promise.resolve(claims[key] ?? null);
  };
  return Object.assign(lookup, { asked });
}

describe('stale claims', () => {
  it('unprepares the claims the API server no longer has or has replaced, and keeps the rest', async () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-stale-'));
    const { state, checkpoint } = nodeState(root, 'dgx-h100', false);
    for (const [uid, gpu] of [
      ['live', 'gpu-0'],
      ['gone', 'gpu-1'],
      ['replaced', 'gpu-2'],
      ['unknown', 'gpu-3'],
    ] as const)
      await state.prepare(gpuClaim(uid, [gpu]));
    const api = apiServer({ 'default/claim-live': 'live', 'default/claim-replaced': 'a-new-uid' }, [
      'default/claim-unknown',
    ]);

    const p = await releaseStaleClaims([{ name: 'gpu.nvidia.com', checkpoint, state }], api, log);

    assert.deepEqual(
      p.released.map((r) => r.uid),
      ['gone', 'replaced'],
    );
    assert.equal(p.failed, 1, 'the claim whose lookup failed is counted, and kept');
    assert.deepEqual(
      checkpoint
        .all()
        .map(([uid]) => uid)
        .sort(),
      ['live', 'unknown'],
    );
    assert.deepEqual(readdirSync(join(root, 'state', 'claims')).sort(), ['live', 'unknown']);
    assert.deepEqual(
      readdirSync(join(root, 'cdi'))
        .filter((f) => f.includes('gone') || f.includes('replaced'))
        .sort(),
      [],
      'their CDI specs are gone',
    );
    // What the stale claim held is free: the kubelet's next claim on it is prepared, not refused with
    // "already allocated to different claim".
    const devices = await state.prepare(gpuClaim('next', ['gpu-1']));
    assert.equal(devices[0]?.deviceName, 'gpu-1');
    await assert.rejects(
      state.prepare(gpuClaim('clash', ['gpu-0'])),
      /already allocated to different claim live/,
    );
  });

  it('a sweep retries soon after a failed lookup and stops cleanly', async () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-stale-retry-'));
    const { state, checkpoint } = nodeState(root, 'dgx-h100', false);
    await state.prepare(gpuClaim('gone', ['gpu-4']));
    const failing = ['default/claim-gone'];
    const api = apiServer({}, failing);
    const sweeper = sweepStaleClaims([{ name: 'gpu.nvidia.com', checkpoint, state }], api, {
      log,
      retryMs: 30,
      periodMs: 60_000,
    });
    try {
      assert.equal((await sweeper.first).failed, 1, 'the API server is away at start');
      assert.ok(checkpoint.get('gone'), 'kept while it cannot be asked');
      failing.length = 0;
      for (let i = 0; i < 100 && checkpoint.get('gone'); i++) await sleep(10);
      assert.equal(checkpoint.get('gone'), undefined, 'released once the API server answers');
      assert.ok(!existsSync(join(root, 'state', 'claims', 'gone')));
    } finally {
      await sweeper.stop();
    }
    const asked = api.asked.length;
    await sleep(100);
    assert.equal(api.asked.length, asked, 'no pass after stop');
  });
});
