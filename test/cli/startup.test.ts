import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { COMMANDS } from '../../src/cli/main.js';
import { REPO_ROOT } from '../../src/process/repo.js';

const bin = join(REPO_ROOT, 'bin', 'fakegpu.js');
const hooks = pathToFileURL(join(REPO_ROOT, 'dist', 'test', 'support', 'load-recorder.js')).href;
const dir = mkdtempSync(join(tmpdir(), 'fakegpu-startup-'));
after(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** The packages (node_modules) and fakegpu modules (dist/src) the CLI resolves for a command line. */
function loaded(...args: string[]): { packages: Set<string>; modules: string[] } {
  const log = join(dir, `${args.join('_').replace(/[^\w.-]/g, '-')}.log`);
  const register = `import { register } from 'node:module'; register(${JSON.stringify(hooks)}, { data: ${JSON.stringify(log)} });`;
  const r = spawnSync(
    process.execPath,
    ['--import', `data:text/javascript,${encodeURIComponent(register)}`, bin, ...args],
    { encoding: 'utf8', timeout: 30_000 },
  );
  assert.equal(r.status, 0, `fakegpu ${args.join(' ')}: ${r.stderr}`);
  const urls = readFileSync(log, 'utf8').split('\n');
  const packages = new Set(urls.flatMap((u) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u)?.[1] ?? []));
  const modules = [...new Set(urls.flatMap((u) => /\/dist\/(src\/.+)$/.exec(u)?.[1] ?? []))];
  return { packages, modules };
}

/** What only a command that talks to a cluster or serves one needs. */
const SERVING = ['@kubernetes/client-node', '@grpc/grpc-js', '@grpc/proto-loader', 'pino', 'prom-client'];

const smiXml = join(REPO_ROOT, 'test', 'fixtures', 'nvidia-smi', 'k8s-test-infra-a100.xml');

// Offline commands define every command but load the API client, gRPC, the logger and metrics only in
// the actions that need them: those were most of every command's start-up (bench/startup.ts).
describe('offline commands load no cluster code', () => {
  for (const args of [
    ['--help'],
    ['render', '-p', 'dgx-h100', '-n', 'n1'],
    ['render', '-p', 'oci-bm.gpu.gb200.4', '-n', 'n1', '--dynamic-mig', '-o', 'json'],
    ['validate', 'dgx-h100'],
    ['topo', '-p', 'dgx-h100'],
    ['profiles'],
    ['export', 'karpenter'],
    ['capture', 'script'],
    ['capture', 'node', '--nvidia-smi-xml', smiXml],
  ]) {
    it(`fakegpu ${args.join(' ').replace(REPO_ROOT, '.')}`, () => {
      const { packages } = loaded(...args);
      assert.ok(packages.has('commander'), 'the recorder saw the CLI load');
      assert.deepEqual(
        SERVING.filter((p) => packages.has(p)),
        [],
      );
    });
  }

  it('fakegpu --version defines no command', () => {
    const { packages, modules } = loaded('--version');
    assert.deepEqual(
      [...packages].filter((p) => p !== 'commander'),
      [],
    );
    assert.deepEqual(
      modules.filter((m) => !m.startsWith('src/cli/main.js') && !m.startsWith('src/errors.js')),
      [],
    );
  });

  it("fakegpu render loads no other command's module", () => {
    const { modules } = loaded('render', '-p', 'dgx-h100', '-n', 'n1');
    const cli = modules.filter((m) => m.startsWith('src/cli/')).sort();
    assert.deepEqual(cli, [
      'src/cli/commands.js',
      'src/cli/flags.js',
      'src/cli/main.js',
      'src/cli/options.js',
      'src/cli/output.js',
      'src/cli/usage.js',
    ]);
  });
});

describe('the command table of main', () => {
  it('names each command as the command it makes', async () => {
    for (const [name, make] of COMMANDS) assert.equal((await make(() => undefined)).name(), name);
  });
});
