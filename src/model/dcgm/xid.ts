/**
 * What an XID means, as NVIDIA's XID catalog names it; dcgm-exporter puts the name in the `err_msg`
 * label of `DCGM_FI_DEV_XID_ERRORS` beside the code in `err_code`. The codes a GpuFault is likely to
 * inject; the rest read as unknown.
 */
const MESSAGES: Readonly<Record<number, string>> = {
  0: 'No Error',
  8: 'GPU stopped processing',
  13: 'Graphics Engine Exception',
  31: 'GPU memory page fault',
  32: 'Invalid or corrupted push buffer stream',
  38: 'Driver firmware error',
  43: 'GPU stopped processing',
  45: 'Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda applications and hitting a DBE',
  48: 'Double Bit ECC Error',
  61: 'Internal micro-controller breakpoint/warning (newer drivers)',
  62: 'Internal micro-controller halt (newer drivers)',
  63: 'ECC page retirement or row remapping recording event',
  64: 'ECC page retirement or row remapper recording failure',
  68: 'NVDEC0 Exception',
  69: 'Graphics Engine class error',
  74: 'NVLINK Error',
  79: 'GPU has fallen off the bus',
  92: 'High single-bit ECC error rate',
  94: 'Contained ECC error',
  95: 'Uncontained ECC error',
  109: 'Context Switch Timeout Error',
  119: 'Timeout waiting for RPC from GSP',
  120: 'GSP Error',
  121: 'C2C Link corrected error',
  140: 'ECC unrecovered error',
  154: 'GPU Recovery Action Changed',
};

export function xidMessage(code: number): string {
  return MESSAGES[code] ?? 'Unknown Error';
}
