import type { Preset } from './types.js';
import { AWS } from './machines/aws.js';
import { AZURE } from './machines/azure.js';
import { DGX } from './machines/dgx.js';
import { GCP } from './machines/gcp.js';
import { OCI } from './machines/oci.js';

/** Every preset, one file of machines per vendor (`machines/`): NVIDIA's DGX, then each cloud. */
export const PRESETS: readonly Preset[] = [...DGX, ...AWS, ...GCP, ...OCI, ...AZURE];
