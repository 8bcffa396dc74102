import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { layout } from '../../src/local-cluster/config.js';
import { ensurePki, ETCD_PKI } from '../../src/local-cluster/credentials.js';
import { ensureCa, ensureCert } from '../../src/local-cluster/pki.js';

const scratch = mkdtempSync(join(tmpdir(), 'fakegpu-etcd-pki-'));
after(() => {
  rmSync(scratch, { recursive: true, force: true });
});

describe('etcd certificates', () => {
  it('are added to a PKI from before etcd served TLS, from their own CA, keys 0600', () => {
    const l = layout(join(scratch, 'old-cluster'));
    mkdirSync(l.configDir, { recursive: true });
    // What an older `up` left: the cluster CA and its certificates, nothing of etcd's.
    ensureCa(l.pki);
    ensureCert(l.pki, { file: 'admin', cn: 'kubernetes-admin', org: 'system:masters', usage: 'client' });
    assert.ok(!existsSync(join(l.pki, 'etcd')));
    ensurePki(l, 'n');
    const verify = (ca: string, cert: string): number =>
      spawnSync('openssl', ['verify', '-CAfile', join(l.pki, `${ca}.crt`), join(l.pki, `${cert}.crt`)])
        .status ?? 1;
    for (const cert of [ETCD_PKI.server, ETCD_PKI.peer, ETCD_PKI.client]) {
      assert.equal(verify(ETCD_PKI.ca, cert), 0, `${cert} is signed by etcd's CA`);
      assert.notEqual(verify('ca', cert), 0, `${cert} is not the cluster CA's`);
    }
    assert.notEqual(verify(ETCD_PKI.ca, 'admin'), 0, "the admin's certificate does not open etcd");
    const keys = [
      ...readdirSync(l.pki).map((f) => join(l.pki, f)),
      ...readdirSync(join(l.pki, 'etcd')).map((f) => join(l.pki, 'etcd', f)),
    ].filter((f) => f.endsWith('.key'));
    assert.ok(keys.length >= 5);
    for (const k of keys) assert.equal(statSync(k).mode & 0o777, 0o600, k);
  });
});
