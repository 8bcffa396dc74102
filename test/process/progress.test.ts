import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { duration, Progress, streamLog, timedProgress, type Log } from '../../src/process/progress.js';

describe('progress of long work', () => {
  it('without a terminal: one line per tenth of the way, then the last', () => {
    const lines: string[] = [];
    let now = 0;
    const p = new Progress({
      what: 'KWOK nodes applied',
      total: 50_000,
      log: (l) => lines.push(l),
      now: () => now,
    });
    // 500 a second.
    for (let done = 0; done <= 50_000; done += 250) {
      now = done * 2;
      p.update(done);
    }
    p.finish();
    assert.equal(lines.length, 10, lines.join('\n'));
    assert.equal(lines[0], 'KWOK nodes applied: 5,000/50,000 (10%), 500/s, 10s, ~1m30s left');
    assert.equal(lines[8], 'KWOK nodes applied: 45,000/50,000 (90%), 500/s, 1m30s, ~10s left');
    assert.equal(lines[9], 'KWOK nodes applied: 50,000/50,000 (100%), 500/s, 1m40s');
  });

  it('a jump past several tenths gives one line, and going back none', () => {
    const lines: string[] = [];
    const p = new Progress({ what: 'lifted', total: 100, log: (l) => lines.push(l), now: () => 1000 });
    p.update(35);
    p.update(20);
    p.update(39);
    assert.deepEqual(
      lines.map((l) => l.split(':')[1]?.trim().split(' ')[0]),
      ['35/100'],
    );
  });

  it('on a terminal: one line redrawn at most every 250 ms, ended by a newline; no log lines', () => {
    const drawn: string[] = [];
    const lines: string[] = [];
    const log: Log = Object.assign((l: string) => lines.push(l), {
      tty: { write: (s: string) => drawn.push(s), prefix: 'fakegpu: ' },
    });
    let now = 0;
    const p = new Progress({ what: 'Ready', total: 10, log, now: () => now });
    for (let i = 1; i <= 10; i++) {
      now += 100;
      p.update(i);
    }
    p.finish();
    assert.deepEqual(lines, []);
    // At 100 ms (first), 400 and 700 ms, 1,000 ms; then the last with its newline.
    assert.equal(drawn.length, 5, drawn.join('|'));
    assert.ok(drawn.every((d) => d.startsWith('\r\x1b[2Kfakegpu: Ready: ')));
    assert.ok(drawn[4]?.endsWith('(100%), 10/s, 1s\n'), drawn[4]);
  });

  it('a stream log redraws only on a terminal', () => {
    const written: string[] = [];
    const stream = { isTTY: false, write: (s: string) => written.push(s) } as unknown as NodeJS.WriteStream;
    const log = streamLog('fakegpu: ', stream);
    assert.equal(log.tty, undefined);
    log('x');
    assert.deepEqual(written, ['fakegpu: x\n']);
    const tty = streamLog('p: ', { ...stream, isTTY: true } as unknown as NodeJS.WriteStream);
    assert.equal(tty.tty?.prefix, 'p: ');
  });

  it('times work against an estimate: tenths in a log, never 100% before it ends; a live line on a terminal', async () => {
    const lines: string[] = [];
    const log: Log = (l) => {
      lines.push(l);
    };
    const p = timedProgress('building kubernetes', 2, log);
    await new Promise((r) => setTimeout(r, 1300));
    p.stop();
    assert.deepEqual(lines, ['building kubernetes: 1s of ~2s (50%)']);
    const drawn: string[] = [];
    const tty: Log = Object.assign(() => undefined, {
      tty: { write: (x: string) => drawn.push(x), prefix: 'fakegpu: ' },
    });
    const q = timedProgress('building etcd', Number.NaN, tty);
    await new Promise((r) => setTimeout(r, 1100));
    q.stop();
    assert.equal(drawn[0], '\r\x1b[2Kfakegpu: building etcd: 1s');
    assert.match(drawn.at(-1) ?? '', /building etcd: 1s\n$/);
  });

  it('says durations as people read them', () => {
    assert.deepEqual(
      [duration(42.4), duration(370), duration(3900), duration(-1)],
      ['42s', '6m10s', '1h05m', '0s'],
    );
  });
});
