import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GPUFAULTS_PATH, type NewGpuFault } from '../../src/model/fault/resource.js';
import { ApiError } from '../../src/kube/client.js';
import { FakeFaultApi } from '../support/fake-faults.js';
import { loopback } from '../support/http.js';
import { fakegpuAsync, kubeconfigFor as kubeconfigAt } from '../support/cli-run.js';

const dir = mkdtempSync(join(tmpdir(), 'fakegpu-cli-fault-'));

const fakegpu = fakegpuAsync;
const kubeconfigFor = (server: string, file: string): string => kubeconfigAt(dir, server, file);

/** The fake API of GpuFaults over HTTP, with nodes, for the binary. */
function serve(api: FakeFaultApi, nodes: string[]): (req: IncomingMessage, res: ServerResponse) => void {
  const status = (res: ServerResponse, code: number, message: string): void => {
    res.writeHead(code).end(JSON.stringify({ kind: 'Status', status: 'Failure', message, code }));
  };
  return (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const answer = async (): Promise<unknown> => {
        const node = /^\/api\/v1\/nodes\/([^/]+)$/.exec(url.pathname)?.[1];
        if (node !== undefined) {
          if (!nodes.includes(node)) throw new ApiError(404, `nodes "${node}" not found`);
          return { metadata: { name: node } };
        }
        if (url.pathname === GPUFAULTS_PATH && req.method === 'GET') {
          const page = await api.listFaults({ limit: Number(url.searchParams.get('limit') ?? 0) });
          return {
            kind: 'GpuFaultList',
            items: page.items,
            metadata: { resourceVersion: page.resourceVersion },
          };
        }
        if (url.pathname === GPUFAULTS_PATH && req.method === 'POST') {
          const ref = await api.createFault(JSON.parse(body) as NewGpuFault);
          return {
            kind: 'GpuFault',
            apiVersion: 'fakegpu.dev/v1alpha1',
            metadata: { name: ref.name, resourceVersion: ref.resourceVersion },
          };
        }
        const name = url.pathname.startsWith(`${GPUFAULTS_PATH}/`)
          ? url.pathname.slice(GPUFAULTS_PATH.length + 1)
          : null;
        if (name !== null && req.method === 'DELETE') {
          await api.deleteFault(decodeURIComponent(name));
          return { kind: 'Status', status: 'Success' };
        }
        throw new ApiError(404, 'the server could not find the requested resource');
      };
      answer().then(
        (o) => res.writeHead(200).end(JSON.stringify(o)),
        (e: unknown) => {
          status(res, e instanceof ApiError ? e.code : 500, e instanceof Error ? e.message : String(e));
        },
      );
    });
  };
}

// Each case is a process of its own, most of a second apiece: run side by side.
describe('fakegpu fault inject: refused locally, in one line, before any request', { concurrency: 8 }, () => {
  const cases: [string, string[], string | RegExp][] = [
    [
      'neither --node nor --selector',
      ['--xid', '79'],
      '--node-name: give exactly one of --node-name and --selector',
    ],
    [
      'both --node and --selector',
      ['--node', 'n1', '--selector', 'a=b', '--xid', '79'],
      '--selector: not with --node-name; give exactly one of --node-name and --selector',
    ],
    [
      'two device choices',
      ['--node', 'n1', '--device', 'gpu-1', '--count', '2', '--xid', '79'],
      '--count: not with --device; give at most one of --device, --index, --count and --fraction',
    ],
    [
      'indexes and a fraction',
      ['--node', 'n1', '--index', '1', '--fraction', '0.5', '--xid', '79'],
      '--fraction: not with --index; give at most one of --device, --index, --count and --fraction',
    ],
    [
      'no fault',
      ['--node', 'n1'],
      'fault inject: give one fault: one of --xid N, --ecc-sbe [n], --ecc-dbe [n], --gpu-lost and --unmonitored',
    ],
    [
      'two faults',
      ['--node', 'n1', '--xid', '79', '--gpu-lost'],
      '--gpu-lost: not with --xid; give at most one of --xid N, --ecc-sbe [n], --ecc-dbe [n], --gpu-lost and --unmonitored',
    ],
    [
      'two ECC faults',
      ['--node', 'n1', '--ecc-sbe', '--ecc-dbe', '2'],
      '--ecc-dbe: not with --ecc-sbe; give at most one of --xid N, --ecc-sbe [n], --ecc-dbe [n], --gpu-lost and --unmonitored',
    ],
    ['xid 0', ['--node', 'n1', '--xid', '0'], '--xid: "0" is not an integer from 1 to 999'],
    ['xid 1000', ['--node', 'n1', '--xid', '1000'], '--xid: "1000" is not an integer from 1 to 999'],
    ['xid not a number', ['--node', 'n1', '--xid', '79a'], '--xid: "79a" is not an integer from 1 to 999'],
    [
      'a GPU instance without a compute instance',
      ['--node', 'n1', '--xid', '94', '--gpu-instance', '1'],
      '--compute-instance: give both --gpu-instance and --compute-instance, or neither',
    ],
    [
      'a MIG device for another fault than an XID',
      ['--node', 'n1', '--gpu-lost', '--gpu-instance', '1', '--compute-instance', '0'],
      '--gpu-instance: only with --xid: an XID on a static MIG device',
    ],
    ['ECC count 0', ['--node', 'n1', '--ecc-sbe', '0'], '--ecc-sbe: "0" is not an integer from 1 to 1000000'],
    [
      'fraction 0',
      ['--node', 'n1', '--fraction', '0', '--gpu-lost'],
      '--fraction: "0" is not a decimal in (0, 1], e.g. "0.01" or "1"',
    ],
    [
      'fraction 2',
      ['--node', 'n1', '--fraction', '2', '--gpu-lost'],
      '--fraction: "2" is not a decimal in (0, 1], e.g. "0.01" or "1"',
    ],
    [
      'count 0',
      ['--node', 'n1', '--count', '0', '--gpu-lost'],
      '--count: "0" is not an integer from 1 to 256',
    ],
    [
      'index 256',
      ['--node', 'n1', '--index', '256', '--gpu-lost'],
      '--index: "256" is not an integer from 0 to 255',
    ],
    [
      'an index twice',
      ['--node', 'n1', '--index', '3', '--index', '3', '--gpu-lost'],
      '--index: 3 is given twice',
    ],
    [
      'a device name that is none',
      ['--node', 'n1', '--device', 'GPU 3', '--gpu-lost'],
      '--device: "GPU 3" is not a device name such as "gpu-3" or "gpu-0-mig-1g10gb-19-6"',
    ],
    [
      'a negative seed',
      ['--node', 'n1', '--count', '1', '--seed', '-1', '--gpu-lost'],
      '--seed: "-1" is not an integer from 0 to 4294967295',
    ],
    [
      'a node name that is none',
      ['--node', 'Node_1', '--gpu-lost'],
      `--node-name: "Node_1" is not a valid node name; expected a DNS subdomain (lower-case a-z, 0-9, '-' and '.', at most 253 characters)`,
    ],
    [
      'a selector that is none',
      ['--selector', 'pool in h100', '--gpu-lost'],
      '--selector: "pool in h100" is not a selector term; expected terms such as k=v, k!=v, "k in (a,b)", "k notin (a,b)", k or !k, separated by commas',
    ],
    [
      'a start that is no time',
      ['--node', 'n1', '--gpu-lost', '--start', 'tomorrow'],
      '--start: "tomorrow" is not a time: give an RFC 3339 time with a zone ("2026-01-02T15:04:05Z") or an offset from now ("+30s", "+5m", "+1h30m")',
    ],
    [
      'a time without a zone',
      ['--node', 'n1', '--gpu-lost', '--repair', '2030-01-01T00:00:00'],
      /^--repair: "2030-01-01T00:00:00" is not a time: give an RFC 3339 time with a zone/,
    ],
    [
      'a repair before the start',
      ['--node', 'n1', '--gpu-lost', '--start', '+1h', '--repair', '+30m'],
      /^--repair: "\+30m" is not after the fault begins \(--start \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)$/,
    ],
    [
      'a repair in the past',
      ['--node', 'n1', '--gpu-lost', '--repair', '2020-01-01T00:00:00Z'],
      '--repair: "2020-01-01T00:00:00Z" is not after the fault begins (now)',
    ],
    [
      'a name that is none',
      ['--node', 'n1', '--gpu-lost', '--name', 'My Fault'],
      `--name: "My Fault" is not a valid object name; expected lower-case a-z, 0-9, '-' and '.', at most 253 characters`,
    ],
    [
      'a kubeconfig that is not there, once every flag is right',
      ['--node', 'n1', '--gpu-lost', '--kubeconfig', '/nope'],
      '--kubeconfig: cannot read kubeconfig "/nope" (ENOENT)',
    ],
  ];
  for (const [name, args, want] of cases)
    it(name, async () => {
      const r = await fakegpu('fault', 'inject', ...args);
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stdout, '');
      const line = r.stderr.replace(/^fakegpu: /, '').replace(/\n$/, '');
      assert.ok(!line.includes('\n'), `one line: ${r.stderr}`);
      if (typeof want === 'string') assert.equal(line, want);
      else assert.match(line, want);
    });

  it('clear wants names, --all or --node-name, one of them', async () => {
    for (const [args, want] of [
      [[], 'fakegpu: fault clear: give names, --all or --node-name\n'],
      [['f1', '--all'], 'fakegpu: fault clear: NAME and --all together; give names, --all or --node-name\n'],
      [
        ['--all', '--node', 'n1'],
        'fakegpu: fault clear: --all and --node-name together; give names, --all or --node-name\n',
      ],
      [
        ['--all', '-n', 'n1'],
        'fakegpu: fault clear: --all and --node-name together; give names, --all or --node-name\n',
      ],
    ] as const) {
      const r = await fakegpu('fault', 'clear', ...args);
      assert.deepEqual(r, { code: 1, stdout: '', stderr: want });
    }
  });

  it('list wants a known format', async () => {
    const r = await fakegpu('fault', 'list', '-o', 'xml');
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /^fakegpu: -o, --output: "xml" is not an output format of fault list; allowed: json, yaml, name \(leave -o out for the table\) \(see 'fakegpu fault list --help'\)\n$/,
    );
  });
});

describe('fakegpu fault against an API server', () => {
  const api = new FakeFaultApi();
  let kubeconfig = '';
  let close: () => Promise<void> = () => Promise.resolve();
  before(async () => {
    const s = await loopback(serve(api, ['n1', 'n2']));
    close = () => s.close();
    const server = s.kc.getCurrentCluster()?.server ?? '';
    kubeconfig = kubeconfigFor(server, 'fake.yaml');
  });
  after(async () => {
    await close();
  });

  it('refuses a node the cluster does not have, and creates nothing', async () => {
    const r = await fakegpu('fault', 'inject', '--node', 'nope', '--xid', '79', '--kubeconfig', kubeconfig);
    assert.deepEqual(r, {
      code: 1,
      stdout: '',
      stderr: 'fakegpu: --node-name: there is no node "nope" in the cluster\n',
    });
    assert.equal(api.objects.size, 0);
  });

  it('injects, lists and clears', async () => {
    const xid = await fakegpu(
      'fault',
      'inject',
      '--node',
      'n1',
      '--xid',
      '94',
      '--gpu-instance',
      '7',
      '--compute-instance',
      '0',
      '--index',
      '0',
      '--index',
      '1',
      '--start',
      '2030-01-01T00:00:00Z',
      '--repair',
      '+87600h',
      '--kubeconfig',
      kubeconfig,
    );
    assert.equal(xid.code, 0, xid.stderr);
    assert.match(xid.stdout, /^xid-94-n1-\w{5}\n$/);
    const name = xid.stdout.trim();
    const stored = api.objects.get(name) as unknown as NewGpuFault;
    assert.equal(stored.spec.start, '2030-01-01T00:00:00Z');
    assert.match(stored.spec.repair ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.deepEqual(
      { ...stored.spec, repair: undefined },
      {
        nodeName: 'n1',
        indexes: [0, 1],
        fault: { type: 'Xid', xid: 94, gpuInstanceId: 7, computeInstanceId: 0 },
        start: '2030-01-01T00:00:00Z',
        repair: undefined,
      },
    );

    const ecc = await fakegpu(
      'fault',
      'inject',
      '--selector',
      'pool=h100,zone in (a,b)',
      '--ecc-dbe',
      '3',
      '--fraction',
      '0.01',
      '--seed',
      '7',
      '--name',
      'dbe',
      '--kubeconfig',
      kubeconfig,
    );
    assert.deepEqual(ecc, { code: 0, stdout: 'dbe\n', stderr: '' });
    api.put({
      metadata: { name: 'broken' },
      spec: { nodeName: 'n2', fault: { type: 'Xid' } },
    });
    // What the plugins wrote.
    await api.patchFaultStatus('dbe', {
      status: {
        nodes: {
          n1: {
            devices: [{ name: 'gpu-0', publishedAt: '2030-01-01T00:00:00Z' }],
            unlisted: 2,
            message: null,
            observedGeneration: 1,
          },
        },
        writers: {
          n1: { nodes: 1, devices: 3, unlistedNodes: null },
          'fleet:all': { nodes: 50_000, devices: 400_000, unlistedNodes: 49_900 },
        },
      },
    });

    const list = await fakegpu('fault', 'list', '--kubeconfig', kubeconfig);
    assert.equal(list.code, 0, list.stderr);
    const rows = list.stdout
      .trimEnd()
      .split('\n')
      .map((l) => l.split(/ {3,}/));
    assert.deepEqual(rows[0], ['NAME', 'FAULT', 'TARGET', 'START', 'REPAIR', 'HITS', 'NODES']);
    const row = (n: string): string[] | undefined => rows.find((r) => r[0] === n);
    assert.deepEqual(row('dbe'), [
      'dbe',
      'EccDoubleBit x3',
      '{pool=h100,zone in (a,b)}: fraction 0.01, seed 7',
      '-',
      '-',
      '400003',
      '50001 (49900 not listed)',
    ]);
    assert.deepEqual(row(name)?.slice(0, 4), [
      name,
      'Xid 94 gi=7 ci=0',
      'n1: indexes 0,1',
      '2030-01-01T00:00:00Z',
    ]);
    assert.equal(row(name)?.[5], '0');
    assert.deepEqual(row('broken')?.slice(0, 2), ['broken', 'invalid']);
    assert.match(row('broken')?.[2] ?? '', /^spec\.fault\.xid: xid is required with type Xid/);

    const json = await fakegpu('fault', 'list', '-o', 'json', '--kubeconfig', kubeconfig);
    const items = (JSON.parse(json.stdout) as { items: { metadata: { name: string } }[] }).items;
    assert.deepEqual(items.map((i) => i.metadata.name).sort(), ['broken', 'dbe', name].sort());
    const names = await fakegpu('fault', 'list', '-o', 'name', '--kubeconfig', kubeconfig);
    assert.deepEqual(
      names.stdout.split('\n').filter(Boolean).sort(),
      ['broken', 'dbe', name].map((n) => `gpufault.fakegpu.dev/${n}`).sort(),
    );

    const none = await fakegpu('fault', 'clear', 'dbe', 'zzz', '--kubeconfig', kubeconfig);
    assert.deepEqual(none, { code: 1, stdout: '', stderr: 'fakegpu: fault clear: no GpuFault "zzz"\n' });
    assert.ok(api.objects.has('dbe'), 'a typo in one name deletes none');

    const byNode = await fakegpu('fault', 'clear', '--node', 'n1', '--kubeconfig', kubeconfig);
    assert.deepEqual(byNode, { code: 0, stdout: `${name}\n`, stderr: '' });
    const byName = await fakegpu('fault', 'clear', 'dbe', '--kubeconfig', kubeconfig);
    assert.deepEqual(byName, { code: 0, stdout: 'dbe\n', stderr: '' });
    const all = await fakegpu('fault', 'clear', '--all', '--kubeconfig', kubeconfig);
    assert.deepEqual(all, { code: 0, stdout: 'broken\n', stderr: '' });
    assert.equal(api.objects.size, 0);
  });

  it('says in one line that the CRD is not installed', async () => {
    api.installed = false;
    try {
      const r = await fakegpu('fault', 'list', '--kubeconfig', kubeconfig);
      assert.deepEqual(r, {
        code: 1,
        stdout: '',
        stderr:
          'fakegpu: fault list: listing GpuFaults: the GpuFault CRD (gpufaults.fakegpu.dev) is not installed: kubectl apply -f deploy/crds/gpufault.yaml\n',
      });
    } finally {
      api.installed = true;
    }
  });

  it('says in one line that the API server is not there', async () => {
    const s = await loopback(() => undefined);
    const server = s.kc.getCurrentCluster()?.server ?? '';
    await s.close();
    const r = await fakegpu('fault', 'list', '--kubeconfig', kubeconfigFor(server, 'gone.yaml'));
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      /^fakegpu: fault list: listing GpuFaults: connect ECONNREFUSED 127\.0\.0\.1:\d+\n$/,
    );
  });
});
