import { z } from 'zod';

/**
 * NVIDIA's ComputeDomain and ComputeDomainClique v1beta1 as zod, from the Go types of NVIDIA's DRA
 * driver (kubernetes-sigs/dra-driver-nvidia-gpu, api/nvidia.com/resource/v1beta1): the source of the
 * CRDs in deploy/crds/ (`npm run schemas`). Workloads written for NVIDIA's driver must be accepted and
 * refused as there, so nothing is added: no length limits. The shapes fakegpu writes (resource.ts)
 * must pass these (test/tools/schemas.test.ts).
 */

export const NODE_STATUSES = ['Ready', 'NotReady'] as const;

const INDEX =
  "The daemon's place in its clique, unique per cliqueID, which fixes its DNS name in the IMEX domain. Optional, so that older writers without it are still accepted.";

/** A node whose IMEX daemon has joined, in a domain's status (`name`) or a clique (`nodeName`). */
function nodeEntry<K extends string>(key: K, cliqueID: z.ZodString) {
  return z.object({
    ...({ [key]: z.string() } as Record<K, z.ZodString>),
    ipAddress: z.string(),
    cliqueID,
    index: z.number().int().optional().describe(INDEX),
    status: z
      .enum(NODE_STATUSES)
      .default('NotReady')
      .describe("Whether this node's IMEX daemon is ready to broker GPU memory exchanges."),
  });
}

export const ComputeDomainSpec = z
  .object({
    numNodes: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe(
        "Deprecated. The number of nodes (IMEX daemons) expected to join. With IMEX daemons addressed by DNS names (NVIDIA's default) it only decides when the global status turns Ready; without them every workload pod waits until this many daemons have joined.",
      ),
    channel: z
      .object({
        resourceClaimTemplate: z
          .object({ name: z.string() })
          .describe(
            "The ResourceClaimTemplate the driver generates in this namespace for the workload's pods.",
          ),
        allocationMode: z
          .enum(['All', 'Single'])
          .default('Single')
          .describe('Single for one IMEX channel per claim, All for every channel of the IMEX domain.'),
      })
      .describe("The IMEX channel that the workload's pods claim."),
  })
  .describe('What the workload asks for; fixed once created.');

export const ComputeDomainStatus = z
  .object({
    status: z
      .enum(NODE_STATUSES)
      .describe('Ready once enough nodes have joined and none of them is NotReady.'),
    nodes: z
      .array(
        nodeEntry(
          'name',
          z
            .string()
            .describe("The node's NVLink clique, <cluster UUID>.<clique id>; empty without a fabric."),
        ),
      )
      .optional()
      .describe('One entry per node whose IMEX daemon has joined.'),
  })
  .describe('Written by the driver, for debugging; workloads should not wait on it.');

export const CliqueDaemons = z
  .array(nodeEntry('nodeName', z.string()))
  .describe("One entry per node, written by that node's IMEX daemon.");
