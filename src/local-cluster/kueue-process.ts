import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { ensureComponent, moduleDir, type Toolchain } from './build.js';
import type { Layout } from './config.js';
import { env } from './components.js';
import { installUpstreamCrds } from './crds.js';
import { applyObjects } from './kubectl.js';
import { ensureCert } from './pki.js';
import { httpOk, waitFor } from './probe.js';
import { startDaemon, type Started } from './process.js';
import { REPO_ROOT } from '../process/repo.js';

/** Kueue's webhook server, health probes and metrics, beside fakegpu's own ports. */
export const KUEUE_WEBHOOK = 51522;
export const KUEUE_HEALTH = 51523;
export const KUEUE_METRICS = 51524;
export const KUEUE_NAMESPACE = 'kueue-system';
/** Where Kueue 0.17 reads its metrics certificate when it does not manage its own: not configurable. */
const KUEUE_METRICS_CERT_DIR = '/etc/kueue/metrics/certs';

/**
 * The quota name of whole NVIDIA GPUs: claims of NVIDIA's `gpu.nvidia.com` class count against it (Kueue's
 * `deviceClassMappings`), and it is the class's extended resource, so pods asking `nvidia.com/gpu`
 * count against the same quota.
 */
export const KUEUE_GPU_RESOURCE = 'nvidia.com/gpu';

/** Kueue's Configuration for a host process: its own certificates, no leader election, DRA on. */
function kueueConfig(certDir: string): unknown {
  return {
    apiVersion: 'config.kueue.x-k8s.io/v1beta2',
    kind: 'Configuration',
    namespace: KUEUE_NAMESPACE,
    health: { healthProbeBindAddress: `127.0.0.1:${KUEUE_HEALTH}` },
    metrics: { bindAddress: `127.0.0.1:${KUEUE_METRICS}` },
    webhook: { host: '127.0.0.1', port: KUEUE_WEBHOOK, certDir },
    leaderElection: { leaderElect: false },
    // Kueue's own rotator would write a Secret for a Service the API server cannot reach here; the
    // cluster's CA signs the webhook's certificate instead, as envtest does.
    internalCertManagement: { enable: false },
    integrations: { frameworks: ['batch/job'] },
    featureGates: {
      DynamicResourceAllocation: true,
      // An aggregated API server needs a Service to be reached by; nothing here uses it.
      VisibilityOnDemand: false,
    },
    resources: {
      deviceClassMappings: [{ name: KUEUE_GPU_RESOURCE, deviceClassNames: ['gpu.nvidia.com'] }],
    },
  };
}

interface Webhook {
  name: string;
  clientConfig: { service?: { path?: string }; url?: string; caBundle?: string };
  rules?: { apiGroups?: string[]; resources?: string[] }[];
}

/**
 * Kueue's webhook configurations (`config/components/webhook/manifests.yaml`), pointed at the host process
 * by URL, for its own resources and batch Jobs only: the others (pods, Deployments, JobSets, …) fail
 * closed and would stop every pod of the cluster while Kueue is down.
 */
export function kueueWebhooks(manifests: string, caBundle: string): unknown[] {
  return parseAllDocuments(manifests)
    .map((d) => d.toJS() as { kind?: string; metadata: { name: string }; webhooks?: Webhook[] } | null)
    .filter((o): o is NonNullable<typeof o> => o !== null && o.kind !== undefined)
    .map((o) => ({
      ...o,
      metadata: { name: `kueue-${o.metadata.name}` },
      webhooks: (o.webhooks ?? [])
        .filter((w) =>
          (w.rules ?? []).every((r) =>
            (r.apiGroups ?? []).every(
              (g) => g === 'kueue.x-k8s.io' || (g === 'batch' && (r.resources ?? []).includes('jobs')),
            ),
          ),
        )
        .map((w) => ({
          ...w,
          clientConfig: {
            url: `https://127.0.0.1:${KUEUE_WEBHOOK}${w.clientConfig.service?.path ?? '/'}`,
            caBundle,
          },
        })),
    }));
}

/**
 * Kueue as a host process, built from its module, with its CRDs and webhooks installed: it admits jobs
 * against ClusterQueue quota, counting the GPUs of their ResourceClaimTemplates.
 */
export async function startKueue(l: Layout, t: Toolchain, log: (line: string) => void): Promise<Started> {
  const built = await ensureComponent(REPO_ROOT, 'kueue', log);
  const dir = moduleDir(REPO_ROOT, 'kueue', 'sigs.k8s.io/kueue');
  applyObjects(
    l,
    t.bin,
    [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: KUEUE_NAMESPACE } }],
    `creating namespace ${KUEUE_NAMESPACE}`,
  );
  installUpstreamCrds(l, t.bin, [join(dir, 'config', 'components', 'crd', 'bases')], 'Kueue');
  ensureCert(l.pki, {
    file: 'kueue-webhook',
    cn: 'kueue-webhook',
    usage: 'server',
    san: 'DNS:localhost,IP:127.0.0.1',
  });
  const certDir = join(l.configDir, 'kueue-certs');
  // Without its own certificate management Kueue serves metrics with the certificate of a fixed path
  // (cmd/kueue/main.go), so it gets the same one there.
  for (const dir of [certDir, KUEUE_METRICS_CERT_DIR]) {
    mkdirSync(dir, { recursive: true });
    copyFileSync(join(l.pki, 'kueue-webhook.crt'), join(dir, 'tls.crt'));
    copyFileSync(join(l.pki, 'kueue-webhook.key'), join(dir, 'tls.key'));
  }
  const config = join(l.configDir, 'kueue.yaml');
  writeFileSync(config, stringify(kueueConfig(certDir)));
  log('starting kueue');
  const p = startDaemon(l.run, l.logs, 'kueue', join(built.bin, 'kueue'), [`--config=${config}`], {
    ...env(t),
    KUBECONFIG: l.adminKubeconfig,
  });
  await waitFor('its /readyz', p, () => httpOk(`http://127.0.0.1:${KUEUE_HEALTH}/readyz`), 120_000);
  // Registered once Kueue answers, so no admission waits on a server that is not there yet.
  const caBundle = readFileSync(join(l.pki, 'ca.crt')).toString('base64');
  const hooks = kueueWebhooks(
    readFileSync(join(dir, 'config', 'components', 'webhook', 'manifests.yaml'), 'utf8'),
    caBundle,
  );
  applyObjects(l, t.bin, hooks, "registering Kueue's webhooks");
  return p;
}
