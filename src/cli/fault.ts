import { Command } from 'commander';
import { FakegpuError, schemaError, show } from '../errors.js';
import type { FaultsToClear } from '../kube/gpufault/requests.js';
import {
  checkGpuFault,
  FAULT_LIMITS,
  FRACTION,
  GPUFAULT_API_VERSION,
  GPUFAULT_KIND,
  GpuFaultSpec,
  nameOf,
  parseTime,
  type FaultSpec,
  type GpuFault,
  type GpuFaultSpecInput,
  type NewGpuFault,
} from '../model/fault/resource.js';
import { formatSelector, parseSelector } from '../model/fault/selector.js';
import { totalsOf } from '../model/fault/status.js';
import { checkNodeName } from '../model/render.js';
import { intFlag, kubeconfigOption, loadKubeconfig } from './options.js';
import { serialize, table } from './output.js';
import { examples, nodeNameOption, outputOption } from './flags.js';
import { isDnsLabel, isDnsSubdomain } from '../kube/types/names.js';

/** `fakegpu fault`: GpuFault objects from the command line. Every flag is checked before any request. */

interface InjectFlags {
  nodeName?: string;
  selector?: string;
  device: string[];
  index: string[];
  count?: string;
  fraction?: string;
  seed?: string;
  xid?: string;
  gpuInstance?: string;
  computeInstance?: string;
  eccSbe?: string | true;
  eccDbe?: string | true;
  gpuLost?: true;
  unmonitored?: true;
  name?: string;
  start?: string;
  repair?: string;
  kubeconfig?: string;
}

const collect = (v: string, all: string[]): string[] => [...all, v];

const LATEST = 10 * 365 * 24 * 3600; // seconds: a fault ten years out is a typo

/** `+1h30m`, `+30s`, or an RFC 3339 time with a zone, as milliseconds since the epoch. */
export function parseWhen(text: string, field: string, now: number): number {
  const rel = /^\+(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text);
  if (rel && text !== '+') {
    const s = Number(rel[1] ?? 0) * 3600 + Number(rel[2] ?? 0) * 60 + Number(rel[3] ?? 0);
    if (s > LATEST) throw new FakegpuError(field, `${show(text)} is more than ten years from now`);
    return now + s * 1000;
  }
  const t = parseTime(text);
  if (t === null)
    throw new FakegpuError(
      field,
      `${show(text)} is not a time: give an RFC 3339 time with a zone ("2026-01-02T15:04:05Z") or an offset from now ("+30s", "+5m", "+1h30m")`,
    );
  return t;
}

function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** The one flag of a group that may be given; `given` are the flags given, in the group's order. */
function atMostOne(given: string[], group: string): void {
  if (given.length > 1)
    throw new FakegpuError(given[1] ?? '', `not with ${given[0] ?? ''}; give at most one of ${group}`);
}

const FAULT_FLAGS = '--xid N, --ecc-sbe [n], --ecc-dbe [n], --gpu-lost and --unmonitored';

function faultOf(f: InjectFlags): { fault: FaultSpec; tag: string } {
  const given = [
    f.xid !== undefined && '--xid',
    f.eccSbe !== undefined && '--ecc-sbe',
    f.eccDbe !== undefined && '--ecc-dbe',
    f.gpuLost && '--gpu-lost',
    f.unmonitored && '--unmonitored',
  ].filter((x): x is string => typeof x === 'string');
  if (given.length === 0) throw new FakegpuError('fault inject', `give one fault: one of ${FAULT_FLAGS}`);
  atMostOne(given, FAULT_FLAGS);
  const mig = f.gpuInstance !== undefined || f.computeInstance !== undefined;
  if (mig && f.xid === undefined)
    throw new FakegpuError(
      f.gpuInstance !== undefined ? '--gpu-instance' : '--compute-instance',
      'only with --xid: an XID on a static MIG device',
    );
  if (f.xid !== undefined) {
    const xid = intFlag(f.xid, '--xid', FAULT_LIMITS.xid.min, FAULT_LIMITS.xid.max);
    if (mig && (f.gpuInstance === undefined || f.computeInstance === undefined))
      throw new FakegpuError(
        f.gpuInstance === undefined ? '--gpu-instance' : '--compute-instance',
        'give both --gpu-instance and --compute-instance, or neither',
      );
    const ids =
      f.gpuInstance !== undefined && f.computeInstance !== undefined
        ? {
            gpuInstanceId: intFlag(f.gpuInstance, '--gpu-instance', 0, FAULT_LIMITS.instanceId.max),
            computeInstanceId: intFlag(
              f.computeInstance,
              '--compute-instance',
              0,
              FAULT_LIMITS.instanceId.max,
            ),
          }
        : {};
    return { fault: { type: 'Xid', xid, ...ids }, tag: `xid-${xid}` };
  }
  const ecc = (v: string | true, flag: string): number | undefined =>
    v === true ? undefined : intFlag(v, flag, 1, FAULT_LIMITS.eccCount.max);
  if (f.eccSbe !== undefined) {
    const count = ecc(f.eccSbe, '--ecc-sbe');
    return { fault: { type: 'EccSingleBit', ...(count ? { count } : {}) }, tag: 'ecc-sbe' };
  }
  if (f.eccDbe !== undefined) {
    const count = ecc(f.eccDbe, '--ecc-dbe');
    return { fault: { type: 'EccDoubleBit', ...(count ? { count } : {}) }, tag: 'ecc-dbe' };
  }
  return f.gpuLost
    ? { fault: { type: 'GpuLost' }, tag: 'gpu-lost' }
    : { fault: { type: 'Unmonitored' }, tag: 'unmonitored' };
}

/** The fault the flags describe, refused in one line naming the flag; nothing is asked of the cluster. */
export function faultFromFlags(f: InjectFlags, now: number): NewGpuFault {
  if ((f.nodeName === undefined) === (f.selector === undefined))
    throw new FakegpuError(
      f.nodeName === undefined ? '--node-name' : '--selector',
      f.nodeName === undefined
        ? 'give exactly one of --node-name and --selector'
        : 'not with --node-name; give exactly one of --node-name and --selector',
    );
  const spec: GpuFaultSpecInput = { fault: { type: 'GpuLost' } };
  if (f.nodeName !== undefined) spec.nodeName = checkNodeName(f.nodeName, '--node-name');
  if (f.selector !== undefined) spec.nodeSelector = parseSelector(f.selector, '--selector');

  const choices = [
    f.device.length > 0 && '--device',
    f.index.length > 0 && '--index',
    f.count !== undefined && '--count',
    f.fraction !== undefined && '--fraction',
  ].filter((x): x is string => typeof x === 'string');
  atMostOne(choices, '--device, --index, --count and --fraction');
  if (f.device.length > 0) {
    for (const d of f.device)
      if (!isDnsLabel(d))
        throw new FakegpuError(
          '--device',
          `${show(d)} is not a device name such as "gpu-3" or "gpu-0-mig-1g10gb-19-6"`,
        );
    spec.devices = unique(f.device, '--device', FAULT_LIMITS.gpus);
  }
  if (f.index.length > 0)
    spec.indexes = unique(
      f.index.map((i) => intFlag(i, '--index', 0, FAULT_LIMITS.gpuIndex.max)),
      '--index',
      FAULT_LIMITS.gpus,
    );
  if (f.count !== undefined) spec.count = intFlag(f.count, '--count', 1, FAULT_LIMITS.gpus);
  if (f.fraction !== undefined) {
    if (f.fraction.length > 16 || !FRACTION.test(f.fraction))
      throw new FakegpuError(
        '--fraction',
        `${show(f.fraction)} is not a decimal in (0, 1], e.g. "0.01" or "1"`,
      );
    spec.fraction = f.fraction;
  }
  if (f.seed !== undefined) spec.seed = intFlag(f.seed, '--seed', 0, FAULT_LIMITS.seed.max);

  const { fault, tag } = faultOf(f);
  spec.fault = fault;

  const start = f.start === undefined ? undefined : parseWhen(f.start, '--start', now);
  const repair = f.repair === undefined ? undefined : parseWhen(f.repair, '--repair', now);
  if (start !== undefined) spec.start = rfc3339(start);
  if (repair !== undefined) {
    spec.repair = rfc3339(repair);
    const begins = start === undefined ? now : start;
    if (Math.floor(repair / 1000) <= Math.floor(begins / 1000))
      throw new FakegpuError(
        '--repair',
        `${show(f.repair)} is not after the fault begins (${start === undefined ? 'now' : `--start ${rfc3339(start)}`})`,
      );
  }

  // The flags are checked above one by one; this is the CRD's whole rule set, as the plugin reads it.
  const checked = GpuFaultSpec.safeParse(spec);
  if (!checked.success) throw schemaError(checked.error, spec, 'spec');

  let metadata: NewGpuFault['metadata'];
  if (f.name !== undefined) metadata = { name: checkName(f.name) };
  else
    // The API server appends five random characters (and cuts a long prefix), as for a pod's name.
    metadata = { generateName: `${tag}-${f.nodeName === undefined ? '' : `${f.nodeName}-`}` };
  return { apiVersion: GPUFAULT_API_VERSION, kind: GPUFAULT_KIND, metadata, spec };
}

function unique<T>(list: T[], flag: string, max: number): T[] {
  const seen = new Set<T>();
  for (const x of list) {
    if (seen.has(x)) throw new FakegpuError(flag, `${show(x)} is given twice`);
    seen.add(x);
  }
  if (list.length > max) throw new FakegpuError(flag, `given ${list.length} times; at most ${max}`);
  return list;
}

function checkName(name: string): string {
  if (!isDnsSubdomain(name))
    throw new FakegpuError(
      '--name',
      `${show(name)} is not a valid object name; expected lower-case a-z, 0-9, '-' and '.', at most 253 characters`,
    );
  return name;
}

function describeFault(f: FaultSpec): string {
  if (f.type === 'Xid')
    return `Xid ${f.xid ?? '?'}${f.gpuInstanceId !== undefined ? ` gi=${f.gpuInstanceId} ci=${f.computeInstanceId ?? '?'}` : ''}`;
  if (f.count !== undefined && f.count > 1) return `${f.type} x${f.count}`;
  return f.type;
}

function describeTarget(f: GpuFault): string {
  const s = f.spec;
  const where = s.nodeName ?? `{${formatSelector(s.nodeSelector ?? {})}}`;
  const which =
    s.devices !== undefined
      ? s.devices.join(',')
      : s.indexes !== undefined
        ? `indexes ${s.indexes.join(',')}`
        : s.count !== undefined
          ? `${s.count} GPU(s), seed ${s.seed}`
          : s.fraction !== undefined
            ? `fraction ${s.fraction}, seed ${s.seed}`
            : 'all GPUs';
  return `${where}: ${which}`;
}

export function faultCommand(write: (s: string) => void): Command {
  const cmd = new Command('fault').description(
    'inject GPU failures as NVIDIA’s driver would report them (GpuFault objects), list and clear them',
  );
  examples(cmd, [
    'fakegpu fault inject -n node-1 --index 3 --xid 79',
    'fakegpu fault list',
    'fakegpu fault clear --all',
  ]);
  const inject = objectFlags(
    faultFlags(targetFlags(cmd.command('inject').description('create a GpuFault; prints its name'))),
  )
    .addOption(kubeconfigOption())
    .action((f: InjectFlags, c: Command) => injectAction(f, c, write));
  examples(inject, [
    'fakegpu fault inject -n node-1 --device gpu-3 --xid 79',
    'fakegpu fault inject -n node-1 --index 0 --gpu-lost --repair +10m',
    "fakegpu fault inject --selector 'type=kwok' --fraction 0.01 --ecc-dbe --seed 7",
  ]);
  const clear = cmd
    .command('clear')
    .description('delete GpuFaults: by name, all of them, or those naming a node')
    .argument('[name...]', 'GpuFaults to delete')
    .option('--all', 'every GpuFault');
  clear
    .addOption(nodeNameOption('the GpuFaults whose nodeName is this node'))
    .addOption(kubeconfigOption())
    .action((names: string[], f: ClearFlags, c: Command) => clearAction(names, f, c, write));
  examples(clear, [
    'fakegpu fault clear xid-79-node-1-abcde',
    'fakegpu fault clear -n node-1',
    'fakegpu fault clear --all',
  ]);
  const list = cmd
    .command('list')
    .description('the GpuFaults: NAME FAULT TARGET START REPAIR HITS NODES')
    .addOption(outputOption(['json', 'yaml', 'name'], 'fault list'))
    .addOption(kubeconfigOption())
    .action((f: ListFlags, c: Command) => listAction(f, c, write));
  examples(list, ['fakegpu fault list', 'fakegpu fault list -o yaml']);
  return cmd;
}

/** Which nodes and which of their GPUs. */
function targetFlags(c: Command): Command {
  return c
    .addOption(nodeNameOption('the node of the fault'))
    .option('--selector <labels>', 'the nodes of the fault, by label selector ("k=v,k2 in (a,b)")')
    .option(
      '--device <name>',
      'a published device, e.g. gpu-3 or a static MIG device (repeatable)',
      collect,
      [],
    )
    .option('--index <n>', 'a GPU index (repeatable)', collect, [])
    .option('--count <n>', 'this many GPUs per node, chosen by --seed')
    .option('--fraction <p>', 'each GPU hit with this probability, e.g. 0.01, chosen by --seed')
    .option('--seed <n>', 'seed of --count and --fraction (default 0)');
}

/** What the driver reports. */
function faultFlags(c: Command): Command {
  return c
    .option('--xid <n>', 'an XID error (1-999), e.g. 79 (GPU has fallen off the bus)')
    .option('--gpu-instance <id>', 'with --xid and --compute-instance: on that static MIG device')
    .option('--compute-instance <id>', 'with --xid and --gpu-instance')
    .option('--ecc-sbe [n]', 'n single-bit ECC errors (default 1)')
    .option('--ecc-dbe [n]', 'n double-bit ECC errors (default 1)')
    .option('--gpu-lost', 'the GPU is lost (NVML_ERROR_GPU_IS_LOST)')
    .option('--unmonitored', 'the driver cannot monitor the GPU');
}

/** The GpuFault's name and when it begins and ends. */
function objectFlags(c: Command): Command {
  return c
    .option('--name <name>', 'name of the GpuFault (default: generated, e.g. xid-79-<node>-<5 random>)')
    .option('--start <time>', 'when the fault begins: RFC 3339 or +30s, +5m, +1h (default: now)')
    .option('--repair <time>', 'when the GPU is repaired: RFC 3339 or +30s, +5m, +1h (default: never)');
}

async function injectAction(f: InjectFlags, c: Command, write: (s: string) => void): Promise<void> {
  const fault = faultFromFlags(f, Date.now());
  const kc = await loadKubeconfig(f.kubeconfig, c);
  const [{ injectFault }, { clientOf }] = await Promise.all([
    import('../kube/gpufault/requests.js'),
    import('../kube/client.js'),
  ]);
  write(`${await injectFault(clientOf(kc), fault, f.nodeName)}\n`);
}

interface ClearFlags {
  all?: true;
  nodeName?: string;
  kubeconfig?: string;
}

/** Exactly one of names, --all and --node: a mix would be read two ways. */
function faultsToClear(names: string[], f: ClearFlags): FaultsToClear {
  const forms = [
    names.length > 0 && 'NAME',
    f.all && '--all',
    f.nodeName !== undefined && '--node-name',
  ].filter((x): x is string => typeof x === 'string');
  if (forms.length !== 1)
    throw new FakegpuError(
      'fault clear',
      forms.length === 0
        ? 'give names, --all or --node-name'
        : `${forms.join(' and ')} together; give names, --all or --node-name`,
    );
  if (names.length > 0) return { names };
  if (f.nodeName !== undefined) return { nodeName: checkNodeName(f.nodeName, '--node-name') };
  return { all: true };
}

async function clearAction(
  names: string[],
  f: ClearFlags,
  c: Command,
  write: (s: string) => void,
): Promise<void> {
  const which = faultsToClear(names, f);
  const kc = await loadKubeconfig(f.kubeconfig, c);
  const [{ KubeFaultApi }, { clearFaults }, { clientOf }] = await Promise.all([
    import('../kube/gpufault/api.js'),
    import('../kube/gpufault/requests.js'),
    import('../kube/client.js'),
  ]);
  const doomed = await clearFaults(new KubeFaultApi(clientOf(kc)), which);
  write(doomed.map((n) => `${n}\n`).join(''));
}

interface ListFlags {
  output?: 'json' | 'yaml' | 'name';
  kubeconfig?: string;
}

async function listAction(f: ListFlags, c: Command, write: (s: string) => void): Promise<void> {
  const kc = await loadKubeconfig(f.kubeconfig, c);
  const [{ KubeFaultApi }, { listFaults }, { clientOf }] = await Promise.all([
    import('../kube/gpufault/api.js'),
    import('../kube/gpufault/requests.js'),
    import('../kube/client.js'),
  ]);
  const all = await listFaults(new KubeFaultApi(clientOf(kc)), 'fault list');
  if (f.output === 'name') {
    write(all.map((o) => `gpufault.fakegpu.dev/${nameOf(o)}\n`).join(''));
    return;
  }
  if (f.output !== undefined) {
    write(serialize({ apiVersion: 'v1', kind: 'List', items: all }, f.output));
    return;
  }
  write(table(['NAME', 'FAULT', 'TARGET', 'START', 'REPAIR', 'HITS', 'NODES'], all.map(faultRow)));
}

function faultRow(o: unknown): string[] {
  const r = checkGpuFault(o);
  if (!('fault' in r)) return [nameOf(o), 'invalid', `${r.field}: ${r.detail}`, '-', '-', '-', '-'];
  const x = r.fault;
  // The writers' counts, not the listed entries: a fleet lists only its first nodes.
  const t = totalsOf(x);
  return [
    x.metadata.name,
    describeFault(x.spec.fault),
    describeTarget(x),
    x.spec.start ?? '-',
    x.spec.repair ?? '-',
    String(t.hits),
    t.unlistedNodes > 0 ? `${t.nodesHit} (${t.unlistedNodes} not listed)` : String(t.nodesHit),
  ];
}
