import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cdiDeviceId, cdiDeviceName, cdiKindFor, type CdiSpec, type ContainerEdits } from '../cdi/spec.js';
import type { CheckpointStore, PreparedClaim, PreparedDevice } from '../checkpoint/checkpoint.js';
import { ConfigError } from '../../model/opaque-config/decode.js';
import {
  decodeComputeDomainConfig,
  type ComputeDomainConfig,
} from '../../model/opaque-config/compute-domain.js';
import { removeDurably, UnsafeWriteError, writeNoFollow } from '../durable/file.js';
import { under } from '../durable/path.js';
import type { ObjectApi } from '../../kube/objects.js';
import { baseRequest, type AllocationResult, type ResourceClaim } from '../../kube/types/claim.js';
import { ClaimLifecycle, plannedClaim, type ClaimHooks } from '../prepare/lifecycle.js';
import { ClaimError, fakeDeviceNode, PrepareError } from '../prepare/node.js';
import {
  channelDeviceNodes,
  channelHeldMessage,
  checkChannel,
  notReady,
  prepareFailure,
  type ChannelClaim,
  type ChannelFailure,
} from './prepare.js';
import {
  cliqueName,
  cliquesPath,
  COMPUTE_DOMAINS_PATH,
  DOMAIN_LABEL,
  type ComputeDomain,
  type ComputeDomainClique,
} from '../../model/compute-domain/resource.js';
import { COMPUTE_DOMAIN_DRIVER } from '../../model/compute-domain/slice.js';

/**
 * The node's side of ComputeDomain claims, as NVIDIA's compute-domain kubelet plugin prepares them
 * (compute-domains.md §3). A channel claim passes the checks of `prepare.ts`, labels the node for its
 * domain (which brings the domain's IMEX daemon there) and waits until the node is Ready in the domain,
 * retrying for up to 45 s in one kubelet call as the real plugin does; it then gets its channel device
 * nodes (one or all 2048) when the node has a clique. A daemon claim gets the domain's identity as
 * environment, the daemon's config directory as `/imexd`, and the IMEX management capability. Files and
 * checkpoint go through the shared `ClaimLifecycle`; the domain each device belongs to is recorded, so
 * restart and unprepare need no API.
 */

/** `k8s.compute-domain.nvidia.com/claim`, by the rule NVIDIA's GPU driver follows too. */
export const CD_CDI_KIND = cdiKindFor(COMPUTE_DOMAIN_DRIVER);
const CHANNEL = 'channel-0';
const DAEMON = 'daemon-0';
/** NVIDIA's retry budget for a prepare that waits on the domain: the kubelet's own call deadline. */
export const READY_WAIT_MS = 45_000;
const READY_POLL_MS = 1000;
/** `fabric-imex-mgmt`'s minor under /dev/nvidia-caps; the real one is read from /proc (ours: inferred). */
const IMEX_MGMT_MINOR = 1;

export interface ComputeDomainClaimOptions {
  nodeName: string;
  /** The node's NVLink clique (`<clusterUUID>.<cliqueId>`); null: none. */
  clique: string | null;
  /** The driver's namespace, where cliques live. */
  namespace: string;
  api: ObjectApi;
  cdiRoot: string;
  stateDir: string;
  /** `<kubelet plugins dir>/compute-domain.nvidia.com`: each domain's daemon config goes under domains/. */
  pluginDir: string;
  readyWaitMs?: number;
  readyPollMs?: number;
  /** v0.5.0's domainID check (PR #1368); older releases only refuse an empty one. Default: on. */
  checkDomainID?: boolean;
}

type DomainRef = NonNullable<PreparedDevice['computeDomain']>;

class ComputeDomainHooks implements ClaimHooks {
  readonly cdiKind = CD_CDI_KIND;
  readonly errorPrefix = '';
  /** What the API told prepare about each claim's domain, for `plan`, which may not wait. */
  readonly found = new Map<string, DomainRef>();

  constructor(private readonly o: ComputeDomainClaimOptions) {}

  failure(claim: { namespace: string; name: string; uid: string }, cause: string): string {
    return prepareFailure(claim, cause);
  }

  domainDir(uid: string): string {
    return under(this.o.pluginDir, 'domains', uid);
  }

  has(d: PreparedDevice): boolean {
    return d.deviceName === CHANNEL || d.deviceName === DAEMON;
  }

  plan(claim: ResourceClaim, heldBy: (device: string) => string | undefined): PreparedClaim {
    const uid = claim.metadata.uid;
    const devices: PreparedDevice[] = [];
    for (const r of ours(claim, this.o.nodeName)) {
      if (r.device !== CHANNEL && r.device !== DAEMON)
        throw new ClaimError(`device ${r.device} not found on this node`);
      const domain = this.found.get(uid);
      if (!domain) throw new ClaimError('ComputeDomain not found');
      if (r.device === CHANNEL) {
        const other = heldBy(CHANNEL);
        if (other !== undefined) throw new ClaimError(channelHeldMessage(other));
      }
      const cdi = r.device === DAEMON || domain.cliqueID !== '';
      devices.push({
        requestNames: [baseRequest(r.request)],
        poolName: r.pool,
        deviceName: r.device,
        cdiDeviceIds: cdi ? [cdiDeviceId(uid, r.device, CD_CDI_KIND)] : [],
        uuid: domain.uid,
        type: r.device === CHANNEL ? 'channel' : 'daemon',
        computeDomain: domain,
      });
    }
    return plannedClaim(claim, devices);
  }

  /**
   * The daemon's config template, in the directory its pod mounts as /imexd: the container can write
   * there, so the write follows no link it may have planted, and a refusal fails this claim alone.
   */
  apply(devices: PreparedDevice[]): PreparedDevice[] {
    for (const d of devices)
      if (d.type === 'daemon' && d.computeDomain) {
        try {
          writeNoFollow(join(this.domainDir(d.computeDomain.uid), 'imexd.cfg.tmpl'), imexConfigTemplate());
        } catch (e) {
          if (e instanceof UnsafeWriteError) throw new ClaimError(e.message);
          throw e;
        }
      }
    return devices;
  }

  undo(devices: readonly PreparedDevice[]): void {
    for (const d of devices)
      if (d.type === 'daemon' && d.computeDomain) removeDurably(this.domainDir(d.computeDomain.uid));
  }

  /** Domain directories that no prepared daemon claim holds. */
  sweepInstances(held: readonly PreparedDevice[]): number {
    const keep = new Set(held.filter((d) => d.type === 'daemon').map((d) => d.computeDomain?.uid));
    let dirs: string[];
    try {
      dirs = readdirSync(join(this.o.pluginDir, 'domains'));
    } catch {
      return 0;
    }
    let n = 0;
    for (const uid of dirs)
      if (!keep.has(uid)) {
        removeDurably(join(this.o.pluginDir, 'domains', uid));
        n++;
      }
    return n;
  }

  files(uid: string, c: PreparedClaim): CdiSpec | null {
    const devices = c.devices.flatMap((d) => {
      const cd = d.computeDomain;
      if (!cd || d.cdiDeviceIds.length === 0) return [];
      const edits: ContainerEdits =
        d.type === 'channel'
          ? {
              deviceNodes: channelDeviceNodes(cd.allocationMode ?? 'Single').map((p, i) =>
                fakeDeviceNode(p, i),
              ),
            }
          : {
              env: [
                `CLIQUE_ID=${cd.cliqueID}`,
                `COMPUTE_DOMAIN_UUID=${cd.uid}`,
                `COMPUTE_DOMAIN_NAME=${cd.name}`,
                `COMPUTE_DOMAIN_NAMESPACE=${cd.namespace}`,
              ],
              mounts: [
                {
                  hostPath: this.domainDir(cd.uid),
                  containerPath: '/imexd',
                  options: ['rw', 'nosuid', 'nodev', 'bind'],
                },
              ],
              ...(cd.cliqueID === ''
                ? {}
                : {
                    deviceNodes: [
                      fakeDeviceNode(`/dev/nvidia-caps/nvidia-cap${IMEX_MGMT_MINOR}`, IMEX_MGMT_MINOR),
                    ],
                  }),
            };
      return [{ name: cdiDeviceName(uid, d.deviceName), containerEdits: edits }];
    });
    return devices.length === 0 ? null : { cdiVersion: '0.5.0', kind: CD_CDI_KIND, devices };
  }
}

export class ComputeDomainClaims extends ClaimLifecycle {
  private readonly cd: ComputeDomainHooks;

  constructor(
    checkpoint: CheckpointStore,
    private readonly o: ComputeDomainClaimOptions,
  ) {
    const hooks = new ComputeDomainHooks(o);
    super(checkpoint, hooks, o);
    this.cd = hooks;
  }

  /** NVIDIA's checks and waits first (they read the API), then the shared lifecycle records and writes. */
  override async prepare(claim: ResourceClaim): Promise<PreparedDevice[]> {
    const uid = claim.metadata.uid;
    if (this.checkpoint.get(uid)?.state !== 'PrepareCompleted') {
      const results = ours(claim, this.o.nodeName);
      for (const r of results) {
        const config = configOf(claim, r, this.o.checkDomainID !== false);
        const domain = await this.domainFor(claim, r, config);
        this.cd.found.set(uid, domain);
      }
    }
    try {
      return await super.prepare(claim);
    } finally {
      this.cd.found.delete(uid);
    }
  }

  /** The node's label goes with its channel claim; the record stays until that is done, so a retry can. */
  override async unprepare(uid: string): Promise<void> {
    const channel = this.checkpoint.get(uid)?.devices.find((d) => d.type === 'channel');
    if (channel?.computeDomain) {
      const node = await this.o.api.get<{ metadata: { labels?: Record<string, string> } }>(
        `/api/v1/nodes/${this.o.nodeName}`,
      );
      if (node?.metadata.labels?.[DOMAIN_LABEL] === channel.computeDomain.uid)
        await this.o.api.patch(`/api/v1/nodes/${this.o.nodeName}`, {
          metadata: { labels: { [DOMAIN_LABEL]: null } },
        });
    }
    await super.unprepare(uid);
  }

  private async domainFor(
    claim: ResourceClaim,
    r: AllocationResult,
    config: ComputeDomainConfig,
  ): Promise<DomainRef> {
    const m = claim.metadata;
    const clique = this.o.clique ?? '';
    if (config.kind === 'ComputeDomainDaemonConfig' || r.device !== CHANNEL) {
      const cd = await this.domain(config.domainID);
      if (!cd) throw new PrepareError(prepareFailure(m, `ComputeDomain not found: ${config.domainID}`));
      return {
        uid: cd.metadata.uid,
        name: cd.metadata.name,
        namespace: cd.metadata.namespace,
        cliqueID: clique,
      };
    }
    const c: ChannelClaim = {
      uid: m.uid,
      namespace: m.namespace,
      name: m.name,
      domainID: config.domainID,
      allocationMode: config.allocationMode,
    };
    const deadline = Date.now() + (this.o.readyWaitMs ?? READY_WAIT_MS);
    for (;;) {
      const failure = await this.tryChannel(c);
      if (!('message' in failure))
        return { ...failure, cliqueID: clique, allocationMode: config.allocationMode || 'Single' };
      if (!failure.retry || Date.now() + (this.o.readyPollMs ?? READY_POLL_MS) > deadline)
        throw new PrepareError(failure.message);
      await sleep(this.o.readyPollMs ?? READY_POLL_MS);
    }
  }

  private async tryChannel(c: ChannelClaim): Promise<ChannelFailure | Omit<DomainRef, 'cliqueID'>> {
    const cd = await this.domain(c.domainID);
    const nodePath = `/api/v1/nodes/${this.o.nodeName}`;
    const node = await this.o.api.get<{ metadata: { labels?: Record<string, string> } }>(nodePath);
    const checked = checkChannel({
      claim: c,
      channelHeldBy: this.checkpoint.holder(CHANNEL, c.uid) ?? null,
      domain: cd ? { uid: cd.metadata.uid, namespace: cd.metadata.namespace } : null,
      nodeLabel: node?.metadata.labels?.[DOMAIN_LABEL] ?? null,
    });
    if (!checked.ok) return checked;
    if (checked.labelNode)
      await this.o.api.patch(nodePath, { metadata: { labels: { [DOMAIN_LABEL]: c.domainID } } });
    if (!cd || !(await this.readyIn(cd))) return notReady(c);
    return { uid: cd.metadata.uid, name: cd.metadata.name, namespace: cd.metadata.namespace };
  }

  /** Ready in the node's clique entry, else in the domain's status (nodes without a clique). */
  private async readyIn(cd: ComputeDomain): Promise<boolean> {
    if (this.o.clique) {
      const clique = await this.o.api.get<ComputeDomainClique>(
        `${cliquesPath(this.o.namespace)}/${cliqueName(cd.metadata.uid, this.o.clique)}`,
      );
      if (clique?.daemons?.some((d) => d.nodeName === this.o.nodeName && d.status === 'Ready')) return true;
    }
    return (cd.status?.nodes ?? []).some((n) => n.name === this.o.nodeName && n.status === 'Ready');
  }

  private async domain(uid: string): Promise<ComputeDomain | null> {
    const all = await this.o.api.list<ComputeDomain>(COMPUTE_DOMAINS_PATH);
    return all.find((d) => d.metadata.uid === uid) ?? null;
  }
}

/** This driver's results of the claim on this node. */
function ours(claim: ResourceClaim, node: string): AllocationResult[] {
  return (claim.status?.allocation?.devices?.results ?? []).filter(
    (r) => r.driver === COMPUTE_DOMAIN_DRIVER && r.pool === node,
  );
}

/** The request's opaque config of this driver, decoded; a bad one is a permanent failure. */
function configOf(claim: ResourceClaim, r: AllocationResult, checkDomainID: boolean): ComputeDomainConfig {
  const request = baseRequest(r.request);
  const configs = (claim.status?.allocation?.devices?.config ?? []).filter(
    (c) =>
      c.opaque?.driver === COMPUTE_DOMAIN_DRIVER &&
      (!c.requests || c.requests.length === 0 || c.requests.includes(request)),
  );
  const last = configs[configs.length - 1];
  const m = claim.metadata;
  if (!last?.opaque)
    throw new PrepareError(
      prepareFailure(m, `error applying config: no config found for request ${request}`),
    );
  try {
    return decodeComputeDomainConfig(last.opaque.parameters, checkDomainID);
  } catch (e) {
    if (e instanceof ConfigError)
      throw new PrepareError(prepareFailure(m, `error applying config: ${e.message}`));
    throw e;
  }
}

/** What NVIDIA's daemon fills in (the pod's IP) and runs `nvidia-imex -c` on. */
export function imexConfigTemplate(): string {
  return [
    'IMEX_CMD_BIND_INTERFACE_IP={{ .IMEX_CMD_BIND_INTERFACE_IP }}',
    'IMEX_NODE_CONFIG_FILE=/imexd/nodes.cfg',
    'SERVER_PORT=50000',
    'IMEX_CMD_PORT=50005',
    'IMEX_CMD_ENABLED=1',
    'IMEX_WAIT_FOR_QUORUM=RECOVERY',
    '',
  ].join('\n');
}
