import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { FakegpuError } from '../errors.js';

/**
 * The cluster's certificates, made with the system `openssl` (Node has no X.509 writer). The cluster CA
 * signs the API's identities, which follow the names Kubernetes' RBAC bootstraps (system:masters,
 * system:nodes, …); etcd has a CA of its own, as kubeadm's, so that no certificate the API server
 * trusts (a kubelet's, kube-proxy's) also opens etcd, where one write makes a privileged pod.
 */

export interface Identity {
  /** The files' path in the PKI folder without extension, e.g. `admin` or `etcd/server`. */
  file: string;
  /** The signing CA's, the same way; absent: the cluster CA (`ca`). */
  ca?: string;
  cn: string;
  org?: string;
  /** Subject alternative names for serving certificates, e.g. `DNS:localhost,IP:127.0.0.1`. */
  san?: string;
  usage: 'client' | 'server' | 'both';
}

function openssl(args: string[], what: string, input?: string): string {
  const r = spawnSync('openssl', args, { encoding: 'utf8', input });
  if (r.error) {
    throw new FakegpuError(
      'openssl',
      'the openssl command is needed to create the cluster certificates; install it (apt-get install openssl)',
    );
  }
  if (r.status !== 0)
    throw new FakegpuError('openssl', `${what} failed: ${r.stderr.trim().split('\n').slice(-3).join(' ')}`);
  return r.stdout;
}

/** A CA at `<dir>/<file>.crt|key`; `file` is `ca` for the cluster's, `etcd/ca` for etcd's. */
export function ensureCa(dir: string, file = 'ca', cn = 'fakegpu-cluster-ca'): void {
  mkdirSync(dirname(join(dir, file)), { recursive: true, mode: 0o700 });
  const key = join(dir, `${file}.key`);
  if (existsSync(join(dir, `${file}.crt`)) && existsSync(key)) return;
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '3650',
      '-keyout',
      key,
      '-out',
      join(dir, `${file}.crt`),
      '-subj',
      `/CN=${cn}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    `creating the CA ${cn}`,
  );
  keepPrivate(key);
}

/** Only root reads a private key, whatever the umask of the run that wrote it. */
function keepPrivate(key: string): void {
  chmodSync(key, 0o600);
}

export function ensureCert(dir: string, id: Identity): void {
  const crt = join(dir, `${id.file}.crt`);
  if (existsSync(crt)) return;
  const ca = join(dir, id.ca ?? 'ca');
  const key = join(dir, `${id.file}.key`);
  const csr = join(dir, `${id.file}.csr`);
  const subj = `/CN=${id.cn}${id.org ? `/O=${id.org}` : ''}`;
  openssl(
    [
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      csr,
      '-subj',
      subj,
    ],
    `creating the key for ${id.cn}`,
  );
  keepPrivate(key);
  const eku =
    id.usage === 'both' ? 'serverAuth,clientAuth' : id.usage === 'server' ? 'serverAuth' : 'clientAuth';
  const ext = join(dir, `${id.file}.ext`);
  writeFileSync(
    ext,
    [
      `basicConstraints=CA:FALSE`,
      `keyUsage=critical,digitalSignature,keyEncipherment`,
      `extendedKeyUsage=${eku}`,
      ...(id.san ? [`subjectAltName=${id.san}`] : []),
    ].join('\n') + '\n',
  );
  openssl(
    [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      `${ca}.crt`,
      '-CAkey',
      `${ca}.key`,
      '-CAcreateserial',
      '-days',
      '3650',
      '-out',
      crt,
      '-extfile',
      ext,
    ],
    `signing the certificate for ${id.cn}`,
  );
}

/** The service-account token signing pair (not a certificate). */
export function ensureServiceAccountKey(dir: string): void {
  const key = join(dir, 'sa.key');
  if (existsSync(key)) return;
  openssl(
    ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', key],
    'creating the service-account key',
  );
  keepPrivate(key);
  openssl(
    ['pkey', '-in', key, '-pubout', '-out', join(dir, 'sa.pub')],
    'deriving the service-account public key',
  );
}

const b64 = (path: string): string => readFileSync(path).toString('base64');

/** A kubeconfig with the client certificate embedded, so the file works wherever it is copied. */
export function writeKubeconfig(
  path: string,
  pki: string,
  server: string,
  user: string,
  certFile: string,
): void {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'fakegpu', cluster: { server, 'certificate-authority-data': b64(join(pki, 'ca.crt')) } },
    ],
    users: [
      {
        name: user,
        user: {
          'client-certificate-data': b64(join(pki, `${certFile}.crt`)),
          'client-key-data': b64(join(pki, `${certFile}.key`)),
        },
      },
    ],
    contexts: [{ name: 'fakegpu', context: { cluster: 'fakegpu', user } }],
    'current-context': 'fakegpu',
  };
  writeFileSync(path, stringify(config), { mode: 0o600 });
}
