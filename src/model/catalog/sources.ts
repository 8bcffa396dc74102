/**
 * Where catalog facts come from. Ids match `../shared/reference/gpu-catalog.md` so a reader can follow
 * a value back to the public output it was read from.
 */
export const SOURCES: Record<string, string> = {
  S1: 'NVIDIA open-gpu-kernel-modules README "Compatible GPUs" table (595.45.04) and pci.ids',
  S4: 'bottlerocket-core-kit PR 834: A100-SXM4-40GB nvidia-smi, 580.126.09, BDFs 10:1C.0/10:1D.0 (AWS p4d)',
  S6: 'NVIDIA MIG User Guide (R580): supported profiles, placements, engine counts',
  S7: 'NVIDIA/nccl issue 1264: HGX H100 nvidia-smi, 81559 MiB',
  S8: 'NVIDIA/mig-parted issue 120: 8x H200 nvidia-smi and mig -lgip',
  S10: 'NVIDIA/mig-parted PR 166 / gpu-operator PR 1242: B200 mig -lgip (Jan 2025)',
  S12: 'modal-labs/modal-client PR 2797: nvidia-smi memory totals of H100, A100, A10, L40S, L4, T4',
  S13: 'NVIDIA/mig-parted issue 31: A100-SXM4-80GB nvidia-smi (81920 MiB)',
  S14: 'A100-PCIE-40GB nvidia-smi outputs (40960 MiB, 250 W)',
  S15: 'A100-PCIE-40GB and H100 NVL mig -lgip in a public Go test fixture',
  S16: 'A100 80GB PCIe nvidia-smi (81920 MiB, 300 W) and device query',
  S17: 'A30 mig -lgip and -lgipp outputs in public repositories',
  S22: 'A10G nvidia-smi (23028 MiB, 300 W) on AWS g5',
  S24: '4x T4 nvidia-smi layouts (15360 MiB)',
  S25: 'L4 nvidia-smi on GCP g2 (23034 MiB, 72 W, 00:03.0)',
  S26: 'L40S nvidia-smi (46068 MiB, 350 W) and device query (142 SMs)',
  S27: 'H100 80GB HBM3 mig -lgip, -lgipp and -lci in a public repository',
  S28: 'H100 PCIe nvidia-smi (81559 MiB) and device query (114 SMs)',
  S29: 'H100 NVL nvidia-smi (95830 MiB, 400 W)',
  S31: 'fastfetch issue 1658: H100 NVL core count',
  S32: 'H200 nvidia-smi outputs (143771 MiB, 700 W)',
  S33: 'PyTorch device properties: H200 132 SMs, B200 148 SMs',
  S34: 'GH200 nvidia-smi outputs (97871 MiB, BDF 0009:01:00.0)',
  S35: 'GH200 mig -lgip and compute-instance creation log',
  S36: 'NVIDIA/TensorRT-LLM issue 10278: B200 nvidia-smi (183359 MiB, 1000 W)',
  S37: 'pytorch/ao PR 4002: B200 148 SMs, CC 10.0',
  S38: 'NVIDIA isvtest fixture: 4x GB200 nvidia-smi, 189471 MiB, 595.58.03',
  S39: 'NVIDIA/gpu-operator PR 1303: GB200 mig -lgip (Mar 2025)',
  S40: 'bigstack-oss/cubecos issue 312: RTX PRO 6000 Blackwell Server Edition nvidia-smi and mig -lgip',
  S41: 'GoogleCloudPlatform/container-engine-accelerators PR 564: RTX PRO 6000 mig -lgip; 188 SMs, CC 12.0',
  S42: 'NVIDIA/go-nvlib mig_profile.go: MIG profile naming formula; device.go architecture and brand strings',
  S46: 'GoogleCloudPlatform/container-engine-accelerators partition_gpu.go: GI profile ids and instance counts',
  S49: 'NVIDIA/mig-parted issue 227 / PR 228: GB200 mig -lgip (Aug 2025)',
  S51: 'A100 80GB mig -lgip in two public documents',
  S52: 'NVIDIA/mig-parted config-default.yaml: profile names per PCI device id',
  S56: 'NVIDIA/gpu-operator PR 900 / mig-parted PR 101: H100 NVL mig -lgip',
  S58: 'NVIDIA/mig-parted PR 187 / gpu-operator PR 1351: B200 mig -lgip (Mar 2025)',
  S59: 'NVIDIA/nccl issue 1505: DGX A100 nvidia-smi topo -m and NCCL topology XML',
  S62: 'dask-cuda DGX A100 script: GPU to mlx5 to ibp interface mapping',
  S64: 'DGX A100 nvidia-smi with GPU 7 at 00000000:BD:00.0',
  S66: 'DGX H100 NIC table (BDF, mlx5, netdev) in a public repository',
  S69: 'DGX H100 "dgx052" nvidia-smi and topo -m, 580.126.20',
  S72: 'B200 node nvidia-smi and topo -m in an NCCL issue (Jul 2025)',
  S73: 'DGX B200 SR-IOV NIC list with PCI addresses',
  S74: 'AWS p4d/p4de nvidia-smi: A100 BDFs 10:1C.0 ... A0:1D.0',
  S75: 'AWS p5.48xlarge nvidia-smi: H100 BDFs 53 ... CA',
  S76: 'AWS EFA documentation: p5.48xlarge has 32 EFA network cards',
  S77: 'dstack PR 4110: p5en/p5e instances with 8x H200',
  S79: 'GoogleCloudPlatform/container-engine-accelerators GPUDirect-TCPX config: a3-highgpu-8g NICs and CPU bindings',
  S80: 'H100 BDFs 04:00.0 and 05:00.0 seen on GCP hosts',
  S81: '4x L4 VM nvidia-smi: BDFs 00:03.0-00:06.0, 580.159.04',
  GB300:
    'GB300 nvidia-smi, lspci and numactl outputs in public repositories (580.82.07 ... 580.167.08); NVIDIA DGX Station MIG profile list',
  B300: 'B300 nvidia-smi outputs in public posts (275040 MiB, 1100 W; drivers 580.95.05, 580.105.08), a cudaGetDeviceProperties dump (148 SMs), kokkos PR 8791 (CC 10.3), vllm issue 30441 (NVIDIA B300 SXM6 AC)',
  B300MIG:
    'NVIDIA/mig-parted commit 47c56d9 "add support for the B300 GPU node": config-default.yaml profiles and counts for 0x318210DE; aws/sagemaker-hyperpod-cli PR 403 (the same six for ml.p6-b300.48xlarge)',
  DRANET: 'kubernetes-sigs/dranet examples: ResourceSlices captured from AWS p4d, Azure GB300 and OCI GB200',
  DRIVER:
    'NVIDIA DRA driver source (kubernetes-sigs/dra-driver-nvidia-gpu): deviceinfo.go, mig.go, partitions.go',
  PCIIDS: 'the pci.ids database (vendor and device names DRANET prints); no capture of the device',
  T1: 'nvidia-smi -q and dcgm-exporter outputs in public issues (dcgm-exporter 317, 512, 736; NCCL 1264; DigitalOcean H100 docs): clocks.max.sm and clocks.max.memory, idle clocks, power and temperatures, FB reserved of T4 (447), L4 (470), L40S (608 MiB)',
  T2: 'secondary sources (vendor pages, benchmark write-ups) for max clocks of A30, H200, B200, GB200, B300; no nvidia-smi output seen',
  SMIX: 'nvidia-smi -q -x of real machines in NVIDIA/k8s-test-infra (tests/e2e/go/assertions/nvidiasmi/testdata/hardware: qx-h100, qx-gb200 AWS p6e, qx-gb300, qx-a100, qx-l40s AWS g6e.2xlarge, qx-t4 AWS g4dn.xlarge) and influxdata/telegraf (A100-SXM4-80GB with MIG); copies in test/fixtures/nvidia-smi',
  EC2: 'aws/karpenter-provider-aws website/content/en/docs/reference/instance-types.md (generated from EC2 DescribeInstanceTypes: vCPUs, memory in MiB, architecture, pods) and aws/amazon-vpc-cni-k8s misc/eni-max-pods.txt',
  EC2PREVIEW:
    'aws/karpenter-provider-aws website/content/en/preview/reference/instance-types.md (commit 1d92708, generated July 2026): vCPUs, MiB, GPUs, EFA count, network bandwidth and pods of each GPU type',
  EC2PRICE26:
    'aws/karpenter-provider-aws pkg/providers/pricing/zz_generated.pricing_aws.go (commit 1d92708): on-demand prices in us-east-1, generated 2026-07-20',
  EC2PRICE:
    'aws/karpenter-provider-aws pkg/providers/pricing/zz_generated.pricing_aws.go: on-demand prices in us-east-1, generated 2026-01-19',
  GCEA3:
    'Google Cloud accelerator-optimized machines page: a3-highgpu-8g has 208 vCPUs and 1,872 GB of memory',
  AZSKU:
    'Azure VM SKU list as Microsoft Aspire generates it (AksNodeVmSizes): Standard_ND128isr_GB300_v6, 128 vCPUs, 864 GB',
  CLOUD2:
    'secondary sources (catalogs, third-party tables) for cloud instance sizes with no first-party table found',
  LINUXEFA: 'torvalds/linux commit b687d81 "RDMA/efa: Add EFA 0xefa2 PCI ID"',
  KARPDRA:
    'aws/karpenter-provider-aws pkg/providers/nvidiadra/zz_generated.nvidiadraresourceslices.go (commit 971ab0b): GPU BDFs, PCIe roots and NUMA of p4d, p5 and p6-b200 "captured from" live nodes, in a file its header calls an example that may not be correct',
  ROSA: 'openshift/openshift-docs rosa-sdpolicy-am-aws-compute-types.adoc (commit 125467a): vCPUs and GiB of p5en.48xlarge and p6-b200.48xlarge',
  EFACOUNT:
    'meta-pytorch/torchx PR 995 and two other public tables: EFA devices per instance (p5en 16, p6-b200 8)',
  VANTAGEP6: 'a public copy of instances.vantage.sh P6 data (2025-12-21): p6-b200 and p6e-gb200 sizes',
  EKSGB200:
    'Amazon EKS user guide "Use P6e-GB200 UltraServers with Amazon EKS": 4 GPUs an instance, EFA per GPU, sold in UltraServer capacity blocks',
  SKYGCP:
    'skypilot-org/skypilot-catalog catalogs/v8/gcp/vms.csv (commit 006059e): vCPUs and memory of a3-megagpu-8g, a3-ultragpu-8g, a4-highgpu-8g',
  SKYGCP7:
    'skypilot-org/skypilot-catalog catalogs/v7/gcp/vms.csv (commit 017e250): vCPUs and MemoryGiB of the A2, A3 and G2 sizes',
  GCEPRICE:
    'kubernetes/autoscaler cluster-autoscaler/cloudprovider/gce/gce_price_info.go (commit 5a172bc): on-demand prices of the A2 types, GPUs included',
  GCPGPUS:
    'Google Cloud "GPU machine types" (docs.cloud.google.com/compute/docs/gpus): a4x-maxgpu-4g-metal has 144 vCPUs, 960 GB, 6 NICs (3,600 Gbps) and 4 GB300',
  OCIB300:
    "oracle-quickstart/oci-hpc-oke (commit 61d210a): BM.GPU.B300.8 with 16 RDMA ports and BM.GPU.GB300.4 with 8; a third party's reading of Oracle's price API: B300 $15, GB300 $18 a GPU-hour",
  GCPARM: 'Google Cloud "Arm VMs on Compute": a4x-highgpu-4g has 140 vCPUs, 884 GB and 4 GB200',
  GCPNET:
    'Google Cloud "Networking and GPU machines": A3 Mega 1,800 Gbps GPUDirect-TCPXO; A3 Ultra and A4 eight CX-7 aligned one per GPU (3,200 Gbps); A4X four CX-7 (1,600 Gbps)',
  GKEDRANET:
    "GKE cluster-autoscaler's DRANET template test (seen in a public code index; no public repository found): NIC names per GPU machine type",
  AIONGKE:
    'ai-on-gke "Device alignment of GPU, NIC, and CPU with DRA": a3-ultragpu-8g ResourceSlices (GPU 0 at 8f:00.0 under pci0000:8c; gpu0rdma0 91:00.0, gpu6rdma0 cd:00.0 under pci0000:c8), 580.126.20',
  DRANETGKE:
    'kubernetes-sigs/dranet "GKE and GPUDirect RDMA with DRA": an a4-highgpu-8g NCCL log with its eight B200 BDFs',
  AZDOCS:
    'MicrosoftDocs/azure-compute-docs size pages of ND H100 v5, ND H200 v5 and ND GB200 v6: vCPUs, memory, GPUs, InfiniBand',
  AZDOCS2:
    'MicrosoftDocs/azure-compute-docs size pages of ND A100 v4, NDm A100 v4, NC A100 v4, NC H100 v5 and NCas T4 v3: vCPUs, memory, GPUs and their memory, InfiniBand',
  AZPRICE2:
    "public tables quoting Azure's retail prices (eastus, Linux pay-as-you-go) of the ND A100 v4, NC A100 v4, NC H100 v5 and NCas T4 v3 sizes; no first-party table read",
  AZNDV5TOPO:
    'Azure/azhpc-images topology/ndv5-topo.xml: ND H100 v5 GPU and InfiniBand VF domains, their pairing and NUMA nodes',
  AZPRICE:
    'Azure Retail Prices API values quoted in public code: ND H100 v5 $98.32 (eastus), ND H200 v5 $84.80 (eastus2)',
  OCISHAPES:
    'ai2-compute-gpu/oci-dr-hpc-v2 internal/shapes/shapes.json (commit bd73590): GPU and RDMA NIC BDFs, mlx5 names and GPU-NIC pairs of BM.GPU.H100.8, H200.8, B200.8',
  OCISHAPES2:
    "a markdown copy of OCI's compute shapes page (docs.oracle.com/iaas/Content/Compute/References/computeshapes.htm) in a public code index: OCPUs, GPUs, CPU memory and RDMA of BM.GPU.L40S.4, A100-v2.8, GPU4.8, A10.4 and VM.GPU.A10.1/2",
  OCIHC: 'oracle-quickstart/oci-hpc health checks: the RDMA mlx5 devices per shape',
  SKYOCI:
    'skypilot-org/skypilot-catalog catalogs/v8/oci/vms.csv (commit 0588751): vCPUs, GiB and list price per shape',
  FAKEGPU: 'fakegpu inference: no public output found; value chosen to be consistent with the confirmed ones',
};
