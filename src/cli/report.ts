import { Command } from 'commander';
import { clip, FakegpuError, show } from '../errors.js';
import { isLabelKey, LABEL_KEY_FORM } from '../model/fault/selector.js';
import { examples, outputOption } from './flags.js';
import { kubeconfigOption, loadKubeconfig, sourceOf } from './options.js';
import { serialize, table } from './output.js';

interface ReportFlags {
  output?: 'json' | 'yaml';
  kubeconfig?: string;
  poolLabel?: string;
}

/**
 * `fakegpu report`: the scheduler scorecard of a cluster's GPUs, from its slices, claims, pods and nodes
 * (docs/scorecard.md): how much is allocated, how well packed, placed on topology, exposed to faults.
 */
export function reportCommand(write: (s: string) => void): Command {
  const cmd = new Command('report')
    .description(
      'the scheduler scorecard: GPUs allocated, free and tainted, packing and fragmentation, topology and exposure, for the cluster, each node pool and each rack',
    )
    .addOption(outputOption(['json', 'yaml'], 'report'))
    .addOption(kubeconfigOption())
    .option(
      '--pool-label <label>',
      'the node label that names a node pool (default: the first of fakegpu.dev/pool, karpenter.sh/nodepool and the clouds’ any node has)',
    )
    .action((f: ReportFlags, c: Command) => reportAction(f, c, write));
  examples(cmd, [
    'fakegpu report',
    'fakegpu report -o json',
    'fakegpu report --pool-label node.kubernetes.io/instance-type',
  ]);
  return cmd;
}

async function reportAction(f: ReportFlags, c: Command, write: (s: string) => void): Promise<void> {
  if (f.poolLabel !== undefined && !isLabelKey(f.poolLabel))
    throw new FakegpuError('--pool-label', `${show(f.poolLabel)} is not a label key: ${LABEL_KEY_FORM}`);
  const kc = await loadKubeconfig(f.kubeconfig, c);
  const [{ clientOf }, { clusterScorecard }, { REPORT_HEADER, reportRows }] = await Promise.all([
    import('../kube/client.js'),
    import('../tools/report/cluster-view.js'),
    import('../tools/report/table.js'),
  ]);
  let s: Awaited<ReturnType<typeof clusterScorecard>>;
  try {
    s = await clusterScorecard(clientOf(kc), f.poolLabel);
  } catch (e) {
    throw new FakegpuError(
      sourceOf(c, 'kubeconfig', '--kubeconfig'),
      `listing the cluster failed: ${clip(e instanceof Error ? e.message : String(e))}`,
    );
  }
  if (f.output !== undefined) {
    write(serialize(s, f.output));
    return;
  }
  const { rows, notes } = reportRows(s);
  write(table(REPORT_HEADER, rows));
  for (const n of notes) write(`${n}\n`);
}
