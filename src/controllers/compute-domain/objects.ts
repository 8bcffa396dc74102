import { CD_GROUP_VERSION } from '../../model/compute-domain/resource.js';
import {
  daemonName,
  DOMAIN_LABEL,
  FINALIZER,
  MAX_NODES_PER_IMEX_DOMAIN,
  TARGET_LABEL,
  type ComputeDomain,
} from '../../model/compute-domain/resource.js';
import { CHANNEL_CLASS, COMPUTE_DOMAIN_DRIVER, DAEMON_CLASS } from '../../model/compute-domain/slice.js';

/**
 * What NVIDIA's ComputeDomain controller creates for each domain (imex.mode=driverManaged): the claim
 * template the workload's pods use, in the domain's namespace, and in the driver's namespace the
 * daemon's claim template and the DaemonSet that runs one IMEX daemon on every node the domain's
 * workload lands on (its node selector is the label the kubelet plugin sets at channel prepare).
 * Names, labels, finalizer, configs and probes: compute-domains.md §2. Pure.
 */

export const DAEMON_CONTAINER = 'compute-domain-daemon';
const RCT_API = 'resource.k8s.io/v1';

export interface DaemonSetOptions {
  namespace: string;
  image: string;
  imagePullPolicy?: 'IfNotPresent' | 'Never' | 'Always';
}

export function workloadTemplate(cd: ComputeDomain): object {
  const uid = cd.metadata.uid;
  return {
    apiVersion: RCT_API,
    kind: 'ResourceClaimTemplate',
    metadata: {
      name: cd.spec.channel.resourceClaimTemplate.name,
      namespace: cd.metadata.namespace,
      labels: { [DOMAIN_LABEL]: uid, [TARGET_LABEL]: 'Workload' },
      finalizers: [FINALIZER],
    },
    spec: {
      spec: {
        devices: {
          requests: [{ name: 'channel', exactly: { deviceClassName: CHANNEL_CLASS } }],
          config: [
            {
              requests: ['channel'],
              opaque: {
                driver: COMPUTE_DOMAIN_DRIVER,
                parameters: {
                  apiVersion: CD_GROUP_VERSION,
                  kind: 'ComputeDomainChannelConfig',
                  domainID: uid,
                  allocationMode: cd.spec.channel.allocationMode ?? 'Single',
                },
              },
            },
          ],
        },
      },
    },
  };
}

export function daemonTemplate(cd: ComputeDomain, namespace: string): object {
  const uid = cd.metadata.uid;
  return {
    apiVersion: RCT_API,
    kind: 'ResourceClaimTemplate',
    metadata: {
      name: daemonName(uid),
      namespace,
      labels: { [DOMAIN_LABEL]: uid, [TARGET_LABEL]: 'Daemon' },
      finalizers: [FINALIZER],
    },
    spec: {
      spec: {
        devices: {
          requests: [{ name: 'daemon', exactly: { deviceClassName: DAEMON_CLASS } }],
          config: [
            {
              requests: ['daemon'],
              opaque: {
                driver: COMPUTE_DOMAIN_DRIVER,
                parameters: {
                  apiVersion: CD_GROUP_VERSION,
                  kind: 'ComputeDomainDaemonConfig',
                  domainID: uid,
                },
              },
            },
          ],
        },
      },
    },
  };
}

const fieldEnv = (name: string, fieldPath: string) => ({ name, valueFrom: { fieldRef: { fieldPath } } });
const check = (periodSeconds: number, failureThreshold: number) => ({
  exec: { command: [DAEMON_CONTAINER, 'check'] },
  periodSeconds,
  failureThreshold,
});

export function daemonSet(cd: ComputeDomain, o: DaemonSetOptions): object {
  const uid = cd.metadata.uid;
  const labels = { [DOMAIN_LABEL]: uid };
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: daemonName(uid), namespace: o.namespace, labels, finalizers: [FINALIZER] },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          nodeSelector: labels,
          tolerations: [{ operator: 'Exists' }],
          resourceClaims: [{ name: DAEMON_CONTAINER, resourceClaimTemplateName: daemonName(uid) }],
          containers: [
            {
              name: DAEMON_CONTAINER,
              image: o.image,
              imagePullPolicy: o.imagePullPolicy ?? 'IfNotPresent',
              command: [DAEMON_CONTAINER, 'run'],
              env: [
                { name: 'MAX_NODES_PER_IMEX_DOMAIN', value: String(MAX_NODES_PER_IMEX_DOMAIN) },
                fieldEnv('NODE_NAME', 'spec.nodeName'),
                fieldEnv('POD_IP', 'status.podIP'),
                fieldEnv('POD_UID', 'metadata.uid'),
                fieldEnv('POD_NAME', 'metadata.name'),
                fieldEnv('POD_NAMESPACE', 'metadata.namespace'),
                { name: 'NVIDIA_VISIBLE_DEVICES', value: 'void' },
              ],
              resources: { claims: [{ name: DAEMON_CONTAINER }] },
              startupProbe: check(1, 1200),
              readinessProbe: check(10, 1),
              livenessProbe: check(60, 20),
            },
          ],
        },
      },
    },
  };
}
