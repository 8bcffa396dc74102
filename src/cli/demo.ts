import { setTimeout as sleep } from 'node:timers/promises';
import { Command } from 'commander';
import { DEFAULT_NODE, defaultClusterDir } from '../local-cluster/state.js';
import { FakegpuError } from '../errors.js';
import { resolveProfile } from '../process/profile-file.js';
import { checkNodeName } from '../model/render.js';
import { examplesText, nodeNameOption } from './flags.js';

const progress = (line: string): void => {
  process.stderr.write(`fakegpu: ${line}\n`);
};

const POD = 'fakegpu-demo';

/** A pod that asks for one GPU the way a user would with NVIDIA's driver, and prints what it got. */
export function demoObjects(image: string): unknown[] {
  return [
    {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaimTemplate',
      metadata: { name: 'fakegpu-demo-gpu', namespace: 'default' },
      spec: {
        spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.nvidia.com' } }] } },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: POD, namespace: 'default' },
      spec: {
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 1,
        resourceClaims: [{ name: 'gpu', resourceClaimTemplateName: 'fakegpu-demo-gpu' }],
        containers: [
          {
            name: 'main',
            image,
            imagePullPolicy: 'Never',
            command: [
              'sh',
              '-c',
              'echo "NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"; echo; echo "$ nvidia-smi -L"; nvidia-smi -L; echo; echo "$ nvidia-smi"; nvidia-smi',
            ],
            resources: { claims: [{ name: 'gpu' }] },
          },
        ],
      },
    },
  ];
}

export function demoCommand(write: (s: string) => void): Command {
  return new Command('demo')
    .description('the local cluster with a fake GPU node, a pod that claims a GPU, and what the pod sees')
    .option('--dir <dir>', 'cluster directory', defaultClusterDir())
    .addOption(nodeNameOption('name of the node', { default: DEFAULT_NODE }))
    .option('-p, --profile <preset|file.yaml>', 'the machine the node pretends to be', 'dgx-h100')
    .option('--keep', 'leave the cluster running afterwards (it always stays up if it was running before)')
    .addHelpText('after', examplesText(['fakegpu demo', 'fakegpu demo -p aws-p4d.24xlarge --keep']))
    .action(async (opts: { dir: string; nodeName: string; profile: string; keep?: boolean }) => {
      resolveProfile(opts.profile);
      const [{ applyObjects, clusterDown, clusterStatus, clusterUp, exportLines, kubectl }, { layout }] =
        await Promise.all([import('../local-cluster/cluster.js'), import('../local-cluster/config.js')]);
      // A cluster the demo started goes again, so the ports are free for `npm test`; one it found stays.
      const wasRunning = clusterStatus(opts.dir).every((c) => c.running);
      const e = await clusterUp({
        dir: opts.dir,
        nodeName: checkNodeName(opts.nodeName, '--node-name'),
        profile: opts.profile,
        log: progress,
      });
      const l = layout(opts.dir);
      const bin = e.PATH.split(':')[0] ?? '';
      kubectl(l, bin, ['delete', 'pod', POD, '--ignore-not-found', '--wait=true', '--timeout=60s']);
      applyObjects(l, bin, demoObjects(e.FAKEGPU_TEST_IMAGE), 'creating the demo pod', 'demo');
      progress(`pod ${POD} claims one GPU through the DeviceClass gpu.nvidia.com; waiting for it to run`);
      const deadline = Date.now() + 120_000;
      let phase = '';
      // A finished pod's claim is released at once, so note the allocation while the pod is alive.
      let alloc = '';
      while (Date.now() < deadline) {
        phase = kubectl(l, bin, ['get', 'pod', POD, '-o', 'jsonpath={.status.phase}']).out;
        const claim = kubectl(l, bin, [
          'get',
          'pod',
          POD,
          '-o',
          'jsonpath={.status.resourceClaimStatuses[0].resourceClaimName}',
        ]).out;
        if (claim && !alloc) {
          alloc = kubectl(l, bin, [
            'get',
            'resourceclaim',
            claim,
            '-o',
            'jsonpath={range .status.allocation.devices.results[*]}{.pool}/{.device} {end}',
          ]).out.trim();
        }
        if (phase === 'Succeeded' || phase === 'Failed') break;
        await sleep(200);
      }
      if (phase !== 'Succeeded') {
        throw new FakegpuError(
          'demo',
          `pod ${POD} did not complete (phase ${phase || 'unknown'}):\n${kubectl(l, bin, ['describe', 'pod', POD]).out}`,
        );
      }
      write(`Pod ${POD} on node ${opts.nodeName} (${opts.profile}) was allocated ${alloc} and saw:\n\n`);
      write(kubectl(l, bin, ['logs', POD]).out);
      write(
        opts.keep === true || wasRunning
          ? `\nThe cluster keeps running. To use it:\n${exportLines(e)}\n  kubectl get resourceslices,resourceclaims,pods\nStop it with: npx fakegpu cluster down --dir ${opts.dir}\n`
          : '\nThe cluster was stopped again; run the demo with --keep (npm run demo -- --keep) to explore it.\n',
      );
      if (opts.keep !== true && !wasRunning)
        await clusterDown({ dir: opts.dir, purge: false, log: progress });
    });
}
