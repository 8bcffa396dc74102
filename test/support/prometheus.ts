import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureComponent } from '../../src/local-cluster/build.js';
import { REPO_ROOT } from '../../src/process/repo.js';

export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

/** A real Prometheus (built from its Go module as the cluster's components are) scraping `targets` by job. */
export class TestPrometheus {
  private readonly dir = mkdtempSync(join(tmpdir(), 'fakegpu-prometheus-'));
  private proc: ChildProcess | null = null;
  private readonly web = '127.0.0.1:19090';

  private constructor(readonly bin: string) {}

  /** Built first where it is not yet. */
  static async create(log: (line: string) => void): Promise<TestPrometheus> {
    return new TestPrometheus((await ensureComponent(REPO_ROOT, 'prometheus', log)).bin);
  }

  start(targets: Record<string, string>): void {
    const config = join(this.dir, 'prometheus.yml');
    writeFileSync(
      config,
      [
        'global: { scrape_interval: 2s, scrape_timeout: 2s }',
        'scrape_configs:',
        ...Object.entries(targets).map(
          ([job, host]) => `  - { job_name: ${job}, static_configs: [{ targets: ['${host}'] }] }`,
        ),
        '',
      ].join('\n'),
    );
    this.proc = spawn(
      join(this.bin, 'prometheus'),
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(this.dir, 'data')}`,
        `--web.listen-address=${this.web}`,
      ],
      { stdio: 'ignore' },
    );
  }

  stop(): void {
    this.proc?.kill('SIGTERM');
    rmSync(this.dir, { recursive: true, force: true });
  }

  async query(q: string): Promise<Sample[]> {
    const r = await fetch(`http://${this.web}/api/v1/query?query=${encodeURIComponent(q)}`).catch(() => null);
    if (!r?.ok) return [];
    return ((await r.json()) as { data: { result: Sample[] } }).data.result;
  }

  /** `f` until it gives a value, at most a minute. */
  async until<T>(what: string, f: () => Promise<T | undefined>): Promise<T> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const v = await f();
      if (v !== undefined) return v;
      assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
      await sleep(1000);
    }
  }

  async targets(): Promise<{ labels: { job: string }; health: string; lastError: string }[]> {
    const r = (await (await fetch(`http://${this.web}/api/v1/targets`)).json()) as {
      data: { activeTargets: { labels: { job: string }; health: string; lastError: string }[] };
    };
    return r.data.activeTargets;
  }
}

export interface DashboardPanel {
  title: string;
  targets: { expr: string }[];
}

/** The chart's Grafana dashboard's panels. */
export function dashboardPanels(): DashboardPanel[] {
  const path = join(REPO_ROOT, 'deploy', 'helm', 'fakegpu', 'dashboards', 'fakegpu-gpus.json');
  return (JSON.parse(readFileSync(path, 'utf8')) as { panels: DashboardPanel[] }).panels;
}

/** A panel's query for every node: the dashboard's node variable set to all. */
export const forAllNodes = (expr: string): string => expr.replaceAll('$hostname', '.*');
