import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compile, type TopLevelSpec } from 'vega-lite';
import { parse, View } from 'vega';
import { sortResults } from './results.js';
import { chartSpecs } from './specs.js';

/**
 * The SVG charts `npm run docs` writes under bench/charts/ from the committed results in bench/results/,
 * rendered by Vega without a browser (text measured by Vega's own estimate, so the bytes do not depend on
 * the machine's fonts). test/tools/charts.test.ts fails while a chart on disk differs.
 */

export const RESULTS_DIR = 'bench/results';
export const CHARTS_DIR = 'bench/charts';

/** The results committed in bench/results/ of the checkout at `root`, by file name. */
export function committedResults(root: string): { file: string; json: unknown }[] {
  const dir = join(root, RESULTS_DIR);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({
      file: `${RESULTS_DIR}/${f}`,
      json: JSON.parse(readFileSync(join(dir, f), 'utf8')) as unknown,
    }));
}

export async function renderSvg(spec: Record<string, unknown>): Promise<string> {
  const view = new View(parse(compile(spec as unknown as TopLevelSpec).spec), { renderer: 'none' });
  try {
    return `${await view.toSVG()}\n`;
  } finally {
    view.finalize();
  }
}

export async function generatedCharts(
  results: readonly { file: string; json: unknown }[],
): Promise<{ path: string; text: string }[]> {
  const specs = chartSpecs(sortResults(results));
  const out: { path: string; text: string }[] = [];
  for (const [name, spec] of Object.entries(specs))
    out.push({ path: `${CHARTS_DIR}/${name}`, text: await renderSvg(spec) });
  return out;
}
