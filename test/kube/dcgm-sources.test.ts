import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { BadLoadReporter } from '../../src/kube/dcgm-sources.js';
import { attribute, podView, type ClaimView, type PodView } from '../../src/model/dcgm/attribution.js';
import { MAX_PATTERN, QUOTED, UTIL_ANNOTATION } from '../../src/model/dcgm/load.js';
import { FakeApi } from '../support/fake-api.js';

const DRIVER = 'gpu.nvidia.com';

/** A pod as the API server lists it: a claim, a 64 KiB bad load value and annotations dcgm never reads. */
function podObject(i: number): unknown {
  return {
    metadata: {
      namespace: 'ml',
      name: `p-${i}`,
      annotations: {
        [UTIL_ANNOTATION]: `x${'9'.repeat(64 * 1024)}`,
        'kubectl.kubernetes.io/last-applied-configuration': 'y'.repeat(16 * 1024),
        'example.com/note': 'z',
      },
    },
    spec: {
      containers: [{ name: 'c', resources: { claims: [{ name: 'gpu' }] } }],
      resourceClaims: [{ name: 'gpu', resourceClaimName: `c-${i}` }],
    },
    status: { startTime: '2026-01-01T00:00:00Z' },
  };
}

function claimOf(i: number): ClaimView {
  return { namespace: 'ml', name: `c-${i}`, results: [{ driver: DRIVER, pool: 'n', device: `gpu-${i}` }] };
}

describe('bad load annotations with pod churn', () => {
  it('the pod cache keeps only the load annotations, a long value cut past what may parse', () => {
    const p = podView(podObject(0));
    assert.ok(p);
    assert.deepEqual(Object.keys(p.annotations), [UTIL_ANNOTATION]);
    assert.equal(p.annotations[UTIL_ANNOTATION]?.length, MAX_PATTERN + 1);
  });

  it('reports each pod once, quotes at most a cut value, and forgets pods once gone', async () => {
    const api = new FakeApi();
    const bad = new BadLoadReporter(api, pino({ level: 'silent' }), 'test');
    const n = 200;
    const pods: PodView[] = [];
    for (let i = 0; i < n; i++) {
      const p = podView(podObject(i));
      assert.ok(p);
      pods.push(p);
    }
    const claims = pods.map((_, i) => claimOf(i));
    for (let scrape = 0; scrape < 2; scrape++) {
      attribute(claims, pods, DRIVER, bad.report);
      bad.keepOnly(pods);
    }
    await new Promise((r) => setImmediate(r));
    assert.equal(api.events.length, n, 'one event per pod, not one per scrape');
    const note = (api.events[0] as { note: string }).note;
    assert.ok(note.length < QUOTED + 400, `a message of ${note.length} characters`);
    assert.match(
      note,
      new RegExp(
        `^pod ml/p-0 annotation ${UTIL_ANNOTATION}: "x9{${QUOTED - 1}}"\\.\\.\\. \\(over ${MAX_PATTERN} characters\\) is not a load pattern; expected `,
      ),
    );
    assert.equal(bad.size, n);
    // All deleted: the next scrape's cache has none of them.
    attribute([], [], DRIVER, bad.report);
    bad.keepOnly([]);
    assert.equal(bad.size, 0);
  });

  it('a pod whose value changes is told again, once', async () => {
    const api = new FakeApi();
    const bad = new BadLoadReporter(api, pino({ level: 'silent' }), 'test');
    const p = podView(podObject(1));
    assert.ok(p);
    const q: PodView = { ...p, annotations: { [UTIL_ANNOTATION]: 'lots' } };
    for (const pod of [p, p, q, q]) attribute([claimOf(1)], [pod], DRIVER, bad.report);
    await new Promise((r) => setImmediate(r));
    assert.equal(api.events.length, 2);
    assert.equal(bad.size, 1);
  });
});
