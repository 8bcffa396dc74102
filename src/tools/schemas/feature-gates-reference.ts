import { RELEASES, type DriverRelease } from '../../model/device/release.js';
import { GATE_NAMES, GATES, LOGGING_GATES, RULES, ruleMessage } from '../../model/feature-gates/gates.js';

/**
 * docs/feature-gates.md: NVIDIA's gates as fakegpu takes them, from the one table the flag parser reads
 * (src/model/feature-gates/gates.ts), so the page cannot drift from what `--feature-gates` accepts.
 */
export const FEATURE_GATES_REFERENCE = 'docs/feature-gates.md';

function what(g: (typeof GATES)[keyof typeof GATES]): string {
  const m = g.fakegpu;
  if (m.kind === 'modelled') return 'reproduced';
  if (m.kind === 'no-effect') return `accepted, no effect: ${m.why}`;
  return `only at its default: ${m.why}`;
}

export function featureGatesReference(): string {
  const releases = Object.keys(RELEASES) as DriverRelease[];
  const rows = GATE_NAMES.map((n) => {
    const g = GATES[n];
    const has = releases.map((r) => ((g.releases as readonly string[]).includes(r) ? 'yes' : '—'));
    return `| \`${n}\` | ${g.stage} | ${String(g.default)} | ${g.since} | ${has.join(' | ')} | ${g.summary} | ${what(g)} |`;
  });
  const rules = releases.map((r) => `- **${r}**: ${RULES[r].map((x) => `\`${ruleMessage(x)}\``).join('; ')}`);
  return [
    '# Feature gates',
    '',
    "NVIDIA's DRA driver switches its newer behaviour with feature gates (`pkg/featuregates/featuregates.go`).",
    'fakegpu takes the same names and values wherever it publishes or prepares: `--feature-gates` on',
    '`render`, `validate`, `plugin` and `fleet` (env `FEATURE_GATES` on the last two, as NVIDIA reads it),',
    "`cluster up` (for its node plugin and its fleet), and the chart's `featureGates` value, e.g.",
    '',
    '```sh',
    'fakegpu render -p dgx-h100 -n node-1 --feature-gates DRAListTypeAttributes=true',
    '```',
    '',
    "The syntax is component-base's (`A=true,B=false`; Go's booleans; `AllAlpha`/`AllBeta`), and so are the",
    'refusals. A gate the chosen `--dra-driver-release` does not have is refused naming the release. Generated',
    'by `npm run schemas` from `src/model/feature-gates/gates.ts`; edit that and regenerate.',
    '',
    `| gate | stage | default | NVIDIA's stamp | ${releases.join(' | ')} | what it does | in fakegpu |`,
    `|---|---|---|---|${releases.map(() => '---|').join('')}---|---|`,
    ...rows,
    '',
    `component-base's own ${LOGGING_GATES.map((g) => `\`${g}\``).join(', ')} are accepted and change nothing here.`,
    '',
    "## NVIDIA's rules",
    '',
    'Checked in this order after the flag is read (`ValidateFeatureGates`); the first broken one is the refusal,',
    "in NVIDIA's words. `--dynamic-mig` counts as `DynamicMIG=true`.",
    '',
    ...rules,
    '',
  ].join('\n');
}
