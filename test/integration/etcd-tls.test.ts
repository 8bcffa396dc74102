import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { layout, PORTS } from '../../src/local-cluster/config.js';
import { ETCD_PKI } from '../../src/local-cluster/credentials.js';
import { mustKubectl, TEST_CLUSTER_DIR, testCluster } from '../support/cluster.js';

/** etcd's answer to one GET: its status, or why there was none (a refused handshake). */
function ask(url: string, tls: RequestOptions = {}): Promise<string> {
  return new Promise((resolve) => {
    const onRes = (res: { statusCode?: number; resume: () => void }): void => {
      res.resume();
      resolve(`status ${res.statusCode ?? 0}`);
    };
    const req = url.startsWith('https:') ? httpsRequest(url, tls, onRes) : httpGet(url, onRes);
    req.setTimeout(5000, () => req.destroy(new Error('timed out')));
    req.on('error', (e) => {
      resolve(`refused: ${e.message}`);
    });
    if (url.startsWith('https:')) req.end();
  });
}

describe("the local cluster's etcd", () => {
  let e: Exports;
  const pki = layout(TEST_CLUSTER_DIR).pki;
  const file = (f: string): Buffer => readFileSync(join(pki, f));
  const health = (scheme: string): string => `${scheme}://127.0.0.1:${PORTS.etcdClient}/health`;
  before(async () => {
    e = await testCluster();
  });

  it('answers its own client certificate (so the refusals below are of the request, not of a dead etcd)', async () => {
    const tls = {
      ca: file(`${ETCD_PKI.ca}.crt`),
      cert: file(`${ETCD_PKI.client}.crt`),
      key: file(`${ETCD_PKI.client}.key`),
    };
    assert.equal(await ask(health('https'), tls), 'status 200');
  });

  it('refuses plain http, which any local user could send', async () => {
    assert.doesNotMatch(await ask(health('http')), /^status 200$/);
  });

  it('refuses https without a client certificate, or with one of the cluster CA (the admin, a kubelet)', async () => {
    const ca = file(`${ETCD_PKI.ca}.crt`);
    assert.match(await ask(health('https'), { ca }), /^refused: /);
    assert.match(
      await ask(health('https'), { ca, cert: file('admin.crt'), key: file('admin.key') }),
      /^refused: /,
    );
  });

  it('still backs the API server: a write and a read through it', () => {
    assert.equal(mustKubectl(e, ['get', '--raw', '/readyz']), 'ok');
    const name = `etcd-tls-${Date.now().toString(36)}`;
    mustKubectl(e, ['create', 'configmap', name, '--from-literal=k=v']);
    assert.equal(mustKubectl(e, ['get', 'configmap', name, '-o', 'jsonpath={.data.k}']), 'v');
    mustKubectl(e, ['delete', 'configmap', name]);
  });
});
