import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { COMPUTE_DOMAIN_DRIVER } from '../../src/model/compute-domain/slice.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import { DRANET } from '../../src/model/nic/attributes.js';
import { allClear, heldClaims, pluginNodes, refusal } from '../../src/node/plugin/uninstall-check.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import type { ListedClaim } from '../../src/kube/types/claim.js';
import { REPO_ROOT } from '../../src/process/repo.js';

/** `fakegpu uninstall-check`: which claims would outlive the plugin, and the binary over HTTP. */
const DRIVERS = [DRIVER_NAME, DRANET, COMPUTE_DOMAIN_DRIVER];
const NODES = [
  { metadata: { name: 'real' } },
  { metadata: { name: 'kwok-0', annotations: { [KWOK_ANNOTATION]: 'fake' } } },
];
const bin = join(REPO_ROOT, 'bin', 'fakegpu.js');

function claim(
  name: string,
  node: string,
  o: { driver?: string; pods?: string[]; namespace?: string } = {},
): ListedClaim {
  return {
    metadata: { namespace: o.namespace ?? 'default', name },
    status: {
      allocation: {
        devices: { results: [{ driver: o.driver ?? DRIVER_NAME, pool: node }] },
      },
      reservedFor: (o.pods ?? [`${name}-pod`]).map((p) => ({ resource: 'pods', name: p })),
    },
  };
}

const held = (claims: ListedClaim[]) => heldClaims(claims, pluginNodes(NODES), DRIVERS);

describe('uninstall-check: claims held on plugin nodes', () => {
  it('refuses a reserved GPU claim on a real node, naming its pod', () => {
    const h = held([claim('gpu', 'real')]);
    assert.deepEqual(h, [
      {
        namespace: 'default',
        name: 'gpu',
        drivers: [DRIVER_NAME],
        nodes: ['real'],
        holders: ['default/gpu-pod'],
      },
    ]);
    assert.equal(
      refusal(h, DRIVERS),
      `1 pod holds devices of ${DRIVER_NAME} on 1 plugin node: default/gpu-pod; delete it (and whatever would recreate it) first: without the node plugin the kubelet cannot unprepare its devices, and it would never finish terminating`,
    );
  });

  it('passes the same claim on a KWOK node, which has no kubelet', () => {
    assert.deepEqual(held([claim('gpu', 'kwok-0')]), []);
  });

  it('passes an allocated claim reserved for nobody', () => {
    assert.deepEqual(held([claim('gpu', 'real', { pods: [] })]), []);
    const unreserved = claim('gpu', 'real');
    delete unreserved.status?.reservedFor;
    assert.deepEqual(held([unreserved]), []);
  });

  it('passes a claim of another driver, an unallocated claim and one on a node that is gone', () => {
    assert.deepEqual(
      held([
        claim('other', 'real', { driver: 'other.example.com' }),
        { metadata: { namespace: 'default', name: 'pending' }, status: {} },
        claim('gone', 'deleted-node'),
      ]),
      [],
    );
  });

  it('checks the NIC and compute-domain drivers only when asked', () => {
    const claims = [
      claim('nic', 'real', { driver: DRANET }),
      claim('cd', 'real', { driver: COMPUTE_DOMAIN_DRIVER }),
    ];
    assert.deepEqual(
      held(claims).map((c) => c.drivers),
      [[DRANET], [COMPUTE_DOMAIN_DRIVER]],
    );
    assert.deepEqual(heldClaims(claims, pluginNodes(NODES), [DRIVER_NAME]), []);
  });

  it('lists at most 5 pods, once each and sorted, and counts the rest', () => {
    const claims = [
      claim('shared', 'real', { pods: ['p1', 'p2'] }),
      ...['p3', 'p4', 'p5', 'p6', 'p7'].map((p) => claim(p, 'real', { pods: [p] })),
      claim('again', 'real', { pods: ['p1'] }),
      claim('nic', 'real', { driver: DRANET, namespace: 'ml', pods: ['p8'] }),
    ];
    const text = refusal(held(claims), DRIVERS);
    assert.match(
      text,
      new RegExp(
        `^8 pods hold devices of ${DRIVER_NAME}, ${DRANET} on 1 plugin node: default/p1, default/p2, default/p3, default/p4, default/p5 and 3 more; delete them \\(and whatever would recreate them\\) first: `,
      ),
    );
    assert.doesNotMatch(text, /p6|p7|p8/);
  });

  it('says all clear with the drivers it checked', () => {
    assert.equal(
      allClear(DRIVERS),
      `no pod holds a device of ${DRIVER_NAME}, ${DRANET}, ${COMPUTE_DOMAIN_DRIVER} on a plugin node`,
    );
  });
});

describe('fakegpu uninstall-check (the binary)', () => {
  const run = promisify(execFile);

  /** The binary against an HTTP server answering as `handle` does; its exit status and output. */
  async function check(
    handle: RequestListener,
    env: Record<string, string> = {},
  ): Promise<{ code: number; stdout: string; stderr: string }> {
    const server = createServer(handle);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const dir = mkdtempSync(join(tmpdir(), 'fakegpu-uninstall-check-'));
    try {
      const kubeconfig = join(dir, 'kubeconfig');
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      writeFileSync(
        kubeconfig,
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'c', cluster: { server: url, 'insecure-skip-tls-verify': true } }],
          users: [{ name: 'u', user: { token: 't' } }],
          contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
          'current-context': 'x',
        }),
      );
      try {
        const r = await run(process.execPath, [bin, 'uninstall-check', '--kubeconfig', kubeconfig], {
          env: { ...process.env, ...env },
          timeout: 30_000,
        });
        return { code: 0, stdout: r.stdout, stderr: r.stderr };
      } catch (e) {
        const x = e as { code?: number; stdout?: string; stderr?: string };
        return { code: x.code ?? -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
      }
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /** Nodes in one page, claims in two (the second after a continue token). */
  function cluster(claims: ListedClaim[]): RequestListener {
    const list = (items: object[], cont?: string): string =>
      JSON.stringify({ metadata: { resourceVersion: '1', ...(cont ? { continue: cont } : {}) }, items });
    return (req, res) => {
      const url = new URL(req.url ?? '', 'http://x');
      if (req.method === 'GET' && url.pathname === '/api/v1/nodes') res.end(list(NODES));
      else if (req.method === 'GET' && url.pathname === '/apis/resource.k8s.io/v1/resourceclaims')
        res.end(
          url.searchParams.get('continue') === 'next'
            ? list(claims.slice(1))
            : list(claims.slice(0, 1), claims.length > 1 ? 'next' : undefined),
        );
      else res.writeHead(404).end('{}');
    };
  }

  it('exits 0 with one line when only KWOK nodes hold devices', async () => {
    const r = await check(cluster([claim('a', 'kwok-0'), claim('b', 'kwok-0', { driver: DRANET })]));
    assert.deepEqual(r, { code: 0, stdout: `${allClear(DRIVERS)}\n`, stderr: '' });
  });

  it('refuses a pod on a real node, found on the second page, in one line (exit 1)', async () => {
    const r = await check(cluster([claim('a', 'kwok-0'), claim('b', 'real', { driver: DRANET })]));
    assert.deepEqual(r, {
      code: 1,
      stdout: '',
      stderr: `fakegpu: uninstall-check: ${refusal(held([claim('b', 'real', { driver: DRANET })]), DRIVERS)}\n`,
    });
  });

  it('leaves out the NIC and compute-domain drivers as the chart tells it', async () => {
    const r = await check(
      cluster([
        claim('b', 'real', { driver: DRANET }),
        claim('c', 'real', { driver: COMPUTE_DOMAIN_DRIVER }),
      ]),
      { FAKEGPU_NO_NICS: 'true', FAKEGPU_NO_COMPUTE_DOMAINS: 'true', DRIVER_NAME: 'gpu.example.com' },
    );
    assert.deepEqual(r, { code: 0, stdout: `${allClear(['gpu.example.com'])}\n`, stderr: '' });
  });

  it('says what failed in one line when the API server refuses', async () => {
    const r = await check((req, res) => {
      res.writeHead(403, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          kind: 'Status',
          message: 'nodes is forbidden: User "x" cannot list resource "nodes"',
        }),
      );
    });
    assert.deepEqual(r, {
      code: 1,
      stdout: '',
      stderr:
        'fakegpu: uninstall-check: listing nodes: HTTP 403: nodes is forbidden: User "x" cannot list resource "nodes"\n',
    });
  });
});
