/**
 * Real captures each preset is checked against in the tests (`test/captures.test.ts` byte for byte,
 * `test/capture.test.ts` through `capture node` and `diff`): the one list `fakegpu profiles` shows and
 * the tests iterate, so a preset is never said to be checked by a capture no test compares it with.
 */
export interface RealCapture {
  /** File under test/fixtures/captures (slices) or test/fixtures/nvidia-smi (nvidia-smi -q -x). */
  file: string;
  kind: 'slices' | 'nvidia-smi';
  /** The preset the capture is a node of; absent: a machine without a preset. */
  preset?: string;
}

export const REAL_CAPTURES: readonly RealCapture[] = [
  { file: 'aws-p4d.24xlarge.json', kind: 'slices', preset: 'aws-p4d.24xlarge' },
  { file: 'oci-bm.gpu.gb200.4.json', kind: 'slices', preset: 'oci-bm.gpu.gb200.4' },
  { file: 'azure-nd-gb300-v6.json', kind: 'slices', preset: 'azure-nd-gb300-v6' },
  { file: 'k8s-test-infra-h100.xml', kind: 'nvidia-smi', preset: 'aws-p5.48xlarge' },
  { file: 'k8s-test-infra-gb200.xml', kind: 'nvidia-smi', preset: 'aws-p6e-gb200.36xlarge' },
  { file: 'k8s-test-infra-gb300.xml', kind: 'nvidia-smi', preset: 'azure-nd-gb300-v6' },
  { file: 'k8s-test-infra-a100.xml', kind: 'nvidia-smi' },
  { file: 'k8s-test-infra-l40s.xml', kind: 'nvidia-smi', preset: 'aws-g6e.2xlarge' },
  { file: 'k8s-test-infra-t4.xml', kind: 'nvidia-smi', preset: 'aws-g4dn.xlarge' },
  { file: 'telegraf-a100-sxm4-80gb-mig.xml', kind: 'nvidia-smi' },
];

/** `slices aws-p4d.24xlarge.json, nvidia-smi k8s-test-infra-h100.xml`, or none. */
export function capturesOf(preset: string): RealCapture[] {
  return REAL_CAPTURES.filter((c) => c.preset === preset);
}
