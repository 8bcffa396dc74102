import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { ApiClient } from '../../src/kube/client.js';
import { KubeClaimStatus, type ClaimStatusApi } from '../../src/kube/claim-status.js';
import type { ResourceClaim } from '../../src/kube/types/claim.js';
import { buildMachine } from '../../src/model/hardware/build.js';
import { draHandlers } from '../../src/node/plugin/handlers.js';
import { pluginMetrics } from '../../src/node/plugin/metrics.js';
import { nicStatusWriter } from '../../src/node/nic/status.js';
import { PrepareError } from '../../src/node/prepare/node.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { loopback, until } from '../support/http.js';

const NODE = 'node-a';
const log = pino({ level: 'silent' });

const nicClaim: ResourceClaim = {
  metadata: { name: 'nic', namespace: 'team', uid: 'u1' },
  status: {
    allocation: {
      devices: { results: [{ request: 'nic', driver: 'dra.net', pool: NODE, device: 'pci-0000-18-00-0' }] },
    },
  },
};

interface Applied {
  namespace: string;
  name: string;
  body: object;
  o: { fieldManager: string; force: boolean };
}

function recorder(fail?: Error): ClaimStatusApi & { calls: Applied[] } {
  const calls: Applied[] = [];
  return {
    calls,
    applyStatus: (namespace, name, body, o) => {
      calls.push({ namespace, name, body, o });
      return fail ? Promise.reject(fail) : Promise.resolve();
    },
  };
}

const machine = () => buildMachine(resolveProfile('dgx-h100'), { nodeName: NODE, dynamicMig: false });

describe("the plugin's NIC claim status", () => {
  it('applies it with the driver as field manager and force, and only logs a failure', async () => {
    const api = recorder();
    const write = nicStatusWriter(machine().nics, {
      driverName: 'dra.net',
      nodeName: NODE,
      machineNode: NODE,
      api,
      log,
    });
    await write(nicClaim);
    assert.equal(api.calls.length, 1);
    assert.deepEqual(
      api.calls.map(({ namespace, name, o }) => ({ namespace, name, o })),
      [{ namespace: 'team', name: 'nic', o: { fieldManager: 'dra.net', force: true } }],
    );
    const failing = recorder(new Error('forbidden'));
    const lines: string[] = [];
    const spy = pino({ level: 'error' }, { write: (l: string) => lines.push(l) });
    await nicStatusWriter(machine().nics, {
      driverName: 'dra.net',
      nodeName: NODE,
      machineNode: NODE,
      api: failing,
      log: spy,
    })(nicClaim);
    assert.match(
      lines.join(''),
      /Failed to update status for claim.*forbidden|forbidden.*Failed to update status for claim/,
    );
  });

  it('writes nothing for a GPU claim', async () => {
    const api = recorder();
    const gpu: ResourceClaim = {
      ...nicClaim,
      status: {
        allocation: {
          devices: { results: [{ request: 'g', driver: 'gpu.nvidia.com', pool: NODE, device: 'gpu-0' }] },
        },
      },
    };
    await nicStatusWriter(machine().nics, {
      driverName: 'dra.net',
      nodeName: NODE,
      machineNode: NODE,
      api,
      log,
    })(gpu);
    assert.equal(api.calls.length, 0);
  });

  it('is a server-side apply of the status subresource, bounded by its own deadline', async () => {
    const bodies: { url: string; type: string; body: string }[] = [];
    const server = await loopback((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        bodies.push({ url: req.url ?? '', type: req.headers['content-type'] ?? '', body });
        if (req.url?.includes('/hang/')) return;
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    try {
      await new KubeClaimStatus(server.kc).applyStatus(
        'team',
        'nic',
        { status: {} },
        { fieldManager: 'dra.net', force: true },
      );
      assert.deepEqual(bodies[0], {
        url: '/apis/resource.k8s.io/v1/namespaces/team/resourceclaims/nic/status?fieldManager=dra.net&force=true',
        type: 'application/apply-patch+yaml',
        body: '{"status":{}}',
      });
      const started = Date.now();
      await assert.rejects(
        new KubeClaimStatus(server.kc, 200).applyStatus(
          'hang',
          'nic',
          {},
          { fieldManager: 'dra.net', force: true },
        ),
        /no answer within 200 ms/,
      );
      assert.ok(Date.now() - started < 2000);
    } finally {
      await server.close();
    }
  });

  it('is told after each successful prepare, and the answer does not wait for it', async () => {
    const server = await loopback((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(nicClaim));
    });
    try {
      const told: string[] = [];
      let fail = false;
      const handlers = draHandlers(
        {
          prepare: () => (fail ? Promise.reject(new PrepareError('no')) : Promise.resolve([])),
          unprepare: () => Promise.resolve(),
        },
        {
          driver: 'dra.net',
          claims: new ApiClient(server.kc),
          metrics: pluginMetrics(new Registry()),
          log,
          preparedCount: () => 0,
          prepared: (c) => {
            told.push(c.metadata.uid);
          },
        },
      );
      const ref = { namespace: 'team', name: 'nic', uid: 'u1' };
      const ok = await handlers.prepare([ref]);
      assert.equal(ok.claims['u1']?.error, '');
      await until('the hook', () => told.length === 1);
      fail = true;
      const bad = await handlers.prepare([ref]);
      assert.equal(bad.claims['u1']?.error, 'no');
      assert.deepEqual(told, ['u1']);
    } finally {
      await server.close();
    }
  });
});
