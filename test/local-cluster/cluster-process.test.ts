import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import {
  argsOf,
  isAlive,
  startDaemon,
  startedBy,
  stopProcesses,
  stopTree,
} from '../../src/local-cluster/process.js';
import { listeningSockets, socketsClosed } from '../../src/local-cluster/sockets.js';
import { countTainted, nextLookMs, NOT_READY_TAINT, readyRows } from '../../src/local-cluster/kwok-nodes.js';
import * as api from '../../src/kube/api.js';
import { goMemoryLimit } from '../../src/local-cluster/components.js';

/** What `cluster down` relies on to leave nothing running: real processes, stopped and waited for. */

const started: number[] = [];
after(() => {
  for (const pid of started) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone, as it should be.
    }
  }
});

function track(c: ChildProcess): number {
  if (c.pid === undefined) throw new Error('the child did not start');
  started.push(c.pid);
  return c.pid;
}

/** The first line the child writes: the port it listens on. */
function firstLine(c: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    c.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0] ?? '');
    });
    c.once('exit', () => {
      reject(new Error(`exited before writing a line: ${out}`));
    });
  });
}

async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => {
      resolve(false);
    });
  });
}

function state(pid: number): string {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return s.slice(s.lastIndexOf(')') + 2).split(' ')[0] ?? '';
}

const python = spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' });
const pythonExe = python.status === 0 ? python.stdout.trim() : null;

describe('stopping the cluster processes', () => {
  it(
    'a process whose main thread is a zombie while another thread holds its port still runs',
    { skip: pythonExe === null && 'python3 is needed to end a main thread on its own' },
    async () => {
      if (pythonExe === null) return;
      // The main thread ends with pthread_exit while a second one keeps the listening socket open: what a
      // Go daemon looks like while it tears itself down after SIGTERM.
      const script = [
        'import ctypes, socket, sys, threading, time',
        's = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()',
        'threading.Thread(target=lambda: time.sleep(300)).start()',
        'print(s.getsockname()[1], flush=True)',
        'ctypes.CDLL(None).pthread_exit(None)',
      ].join('\n');
      const c = spawn(pythonExe, ['-c', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      const pid = track(c);
      const port = Number(await firstLine(c));
      await until('the main thread to exit', () => state(pid) === 'Z');
      assert.ok(await accepts(port), 'its port still accepts connections');
      assert.equal(isAlive(pid), true);
      const sockets = listeningSockets([pid]);
      assert.deepEqual([...sockets.values()], [port]);

      assert.deepEqual(await stopProcesses([pid], 5000), []);
      assert.equal(isAlive(pid), false);
      assert.deepEqual(await socketsClosed(sockets, 2000), []);
      assert.equal(await accepts(port), false, 'its port refuses connections once stopProcesses returned');
    },
  );

  it('SIGTERM is enough for a process that honours it: no wait for the grace period', async () => {
    const pid = track(spawn('sleep', ['300'], { stdio: 'ignore' }));
    await until('sleep to run', () => argsOf(pid)[0] === 'sleep');
    const t0 = Date.now();
    assert.deepEqual(await stopProcesses([pid], 5000), []);
    assert.ok(Date.now() - t0 < 3000, `took ${Date.now() - t0} ms`);
    assert.equal(isAlive(pid), false);
  });

  it('a process that ignores SIGTERM gets SIGKILL after the grace period, and is waited for', async () => {
    const pid = track(spawn('sh', ['-c', "trap '' TERM; exec sleep 300"], { stdio: 'ignore' }));
    // The trap is set once sh has become sleep.
    await until('sh to exec sleep', () => argsOf(pid)[0] === 'sleep');
    const t0 = Date.now();
    assert.deepEqual(await stopProcesses([pid], 500), []);
    const took = Date.now() - t0;
    assert.ok(took >= 500, `SIGKILL only after the grace period, took ${took} ms`);
    assert.equal(isAlive(pid), false);
  });

  it('stopTree stops a daemon and the children it leaves behind, in its session or not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fakegpu-process-'));
    // As the cluster starts its components: detached, with a pid file and a log.
    const d = startDaemon(
      join(dir, 'run'),
      join(dir, 'logs'),
      'parent',
      'sh',
      ['-c', 'sleep 300 & setsid sleep 300 & wait'],
      process.env,
    );
    started.push(d.pid);
    await until('both children', () => startedBy(d.pid).filter((p) => argsOf(p)[0] === 'sleep').length === 2);
    const children = startedBy(d.pid);
    started.push(...children);
    assert.equal(children.length, 2, `children ${children.join(', ')}`);

    assert.deepEqual(await stopTree(d.pid, 2000, 2000), []);
    for (const p of [d.pid, ...children]) assert.equal(isAlive(p), false, `pid ${p} is gone`);
  });

  it('a listening socket is found by its process, and socketsClosed reports it while it is open', async () => {
    const c = spawn(
      process.execPath,
      [
        '-e',
        "const s = require('net').createServer().listen(0, '127.0.0.1', () => console.log(s.address().port))",
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const pid = track(c);
    const port = Number(await firstLine(c));
    const sockets = listeningSockets([pid]);
    assert.deepEqual([...sockets.values()], [port]);
    assert.deepEqual(await socketsClosed(sockets, 100), [port]);

    assert.deepEqual(await stopProcesses([pid], 5000), []);
    assert.deepEqual(await socketsClosed(sockets, 2000), []);
    assert.equal(await accepts(port), false);
  });
});

describe('counting Ready KWOK nodes from the API server table', () => {
  it('counts Ready and cordoned Ready rows, not NotReady or Unknown ones', () => {
    const table = [
      'kwok-gpu-0   Ready                      agent   5m   v1.37.2',
      'kwok-gpu-1   NotReady                   agent   5m   v1.37.2',
      'kwok-gpu-2   Ready,SchedulingDisabled   agent   5m   v1.37.2',
      'kwok-gpu-3   Unknown                    agent   5m   v1.37.2',
      '',
    ].join('\n');
    assert.equal(readyRows(table), 2);
    assert.equal(readyRows(''), 0);
  });
});

describe('counting KWOK nodes the controller manager has not untainted yet', () => {
  it('reads every page, counts only nodes with the not-ready taint, and asks for KWOK nodes alone', async () => {
    const node = (...keys: string[]): object => ({ spec: { taints: keys.map((key) => ({ key })) } });
    const pages = [
      { items: [node('kwok.x-k8s.io/node', NOT_READY_TAINT), node('kwok.x-k8s.io/node')], next: 'b' },
      { items: [{}, node(NOT_READY_TAINT)], next: undefined },
    ];
    const asked: string[] = [];
    const send = (_method: string, path: string): Promise<string> => {
      asked.push(path);
      const p = pages[asked.length - 1];
      const body = { metadata: { resourceVersion: '7', continue: p?.next ?? '' }, items: p?.items ?? [] };
      return Promise.resolve(JSON.stringify(body));
    };
    assert.equal(await countTainted(api, { send }, NOT_READY_TAINT), 2);
    assert.equal(asked.length, 2);
    assert.match(asked[0] ?? '', /^\/api\/v1\/nodes\?labelSelector=type%3Dkwok&limit=500$/);
    assert.match(asked[1] ?? '', /continue=b/);
  });
});

describe('spacing the looks at tainted KWOK nodes by the rate they are untainted', () => {
  it('looks again in 5 s at first, halfway to the end at the rate seen, within 5 s and a minute', () => {
    assert.equal(nextLookMs(undefined, { at: 0, tainted: 30_000 }), 5000);
    // 1,000 lifted in 10 s: 2,000 left go in 20 s, so the next look in 10 s.
    assert.equal(nextLookMs({ at: 0, tainted: 3000 }, { at: 10_000, tainted: 2000 }), 10_000);
    // 42 a second with 27,000 left: ten minutes to go, a look a minute.
    assert.equal(nextLookMs({ at: 0, tainted: 28_260 }, { at: 30_000, tainted: 27_000 }), 60_000);
    assert.equal(nextLookMs({ at: 0, tainted: 110 }, { at: 10_000, tainted: 10 }), 5000);
    // No progress (or a node added meanwhile): half a minute.
    assert.equal(nextLookMs({ at: 0, tainted: 500 }, { at: 10_000, tainted: 500 }), 30_000);
    assert.equal(nextLookMs({ at: 0, tainted: 500 }, { at: 10_000, tainted: 600 }), 30_000);
  });
});

describe("the control plane's memory limits with KWOK nodes", () => {
  it('gives the API server, scheduler, controller manager and Karpenter a share of the machine, and nothing without KWOK', () => {
    const gib24 = 24 * 2 ** 30;
    assert.deepEqual(goMemoryLimit('kube-apiserver', true, gib24), { GOMEMLIMIT: '12288MiB' });
    assert.deepEqual(goMemoryLimit('kube-scheduler', true, gib24), { GOMEMLIMIT: '3686MiB' });
    assert.deepEqual(goMemoryLimit('kube-controller-manager', true, gib24), { GOMEMLIMIT: '3686MiB' });
    assert.deepEqual(goMemoryLimit('karpenter', true, gib24), { GOMEMLIMIT: '3686MiB' });
    assert.deepEqual(goMemoryLimit('etcd', true, gib24), {}, 'etcd has its own quota');
    assert.deepEqual(goMemoryLimit('kube-apiserver', false, gib24), {});
  });
});
