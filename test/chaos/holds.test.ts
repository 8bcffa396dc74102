import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { conflict, LEADER, overlapsOf, readHolds, WriteJudge } from './holds.js';

const T = (iso: string): number => Date.parse(iso);
const start = (iso: string): string => `\n=== ${iso} /usr/bin/node bin/fakegpu.js fleet --shards 60`;
const line = (o: Record<string, unknown>): string =>
  JSON.stringify({ level: 30, name: 'fakegpu-fleet', ...o });

describe("the chaos suite's reading of shard holds from the replicas' logs", () => {
  it('holds a shard from "took a shard" to "stopped writing shards", to the kill, or to now', () => {
    const { holds } = readHolds(
      [
        {
          replica: 0,
          kills: [T('2026-12-03T18:00:30.000Z')],
          alive: true,
          text: [
            start('2026-12-03T18:00:00.000Z'),
            line({ pid: 10, time: T('2026-12-03T18:00:01.000Z'), msg: 'took a shard', shard: 3 }),
            line({ pid: 10, time: T('2026-12-03T18:00:02.000Z'), msg: 'took a shard', shard: 4 }),
            line({
              pid: 10,
              time: T('2026-12-03T18:00:05.000Z'),
              msg: 'stopped writing shards',
              shards: [4],
            }),
            start('2026-12-03T18:00:31.000Z'),
            line({ pid: 11, time: T('2026-12-03T18:00:50.000Z'), msg: 'took a shard', shard: 7 }),
          ].join('\n'),
        },
      ],
      T('2026-12-03T18:01:00.000Z'),
    );
    assert.deepEqual(
      holds.sort((a, b) => a.from - b.from),
      [
        { shard: 3, who: '0/1', from: T('2026-12-03T18:00:01.000Z'), to: T('2026-12-03T18:00:30.000Z') },
        { shard: 4, who: '0/1', from: T('2026-12-03T18:00:02.000Z'), to: T('2026-12-03T18:00:05.000Z') },
        { shard: 7, who: '0/2', from: T('2026-12-03T18:00:50.000Z'), to: T('2026-12-03T18:01:00.000Z') },
      ],
    );
  });

  // CI keeps the cluster's directory between runs, so a replica's log holds runs of earlier clusters, and
  // a fresh machine starts its processes with the same pids each time: replica 0's pid now was replica
  // 2's in an earlier cluster. Its writes were judged against replica 2's old holds.
  it('names a pid after the latest run that had it, whichever replica logged it', () => {
    const { whoOfPid } = readHolds(
      [
        {
          replica: 0,
          kills: [],
          alive: true,
          text: [
            start('2026-12-03T18:00:00.000Z'),
            line({ pid: 20145, time: T('2026-12-03T18:00:01.000Z'), msg: 'took a shard', shard: 22 }),
          ].join('\n'),
        },
        {
          replica: 2,
          kills: [],
          alive: true,
          text: [
            start('2026-12-01T09:00:00.000Z'),
            line({ pid: 20145, time: T('2026-12-01T09:00:01.000Z'), msg: 'took a shard', shard: 22 }),
            start('2026-12-03T18:00:00.000Z'),
            line({ pid: 20026, time: T('2026-12-03T18:00:01.000Z'), msg: 'took a shard', shard: 5 }),
          ].join('\n'),
        },
      ],
      T('2026-12-03T18:01:00.000Z'),
    );
    assert.equal(whoOfPid.get(20145), '0/1');
    assert.equal(whoOfPid.get(20026), '2/2');
  });

  it('holds every node from "leading" to "stopped leading": a term conflicts with any shard held meanwhile', () => {
    const { holds } = readHolds(
      [
        {
          replica: 0,
          kills: [],
          alive: false,
          text: [
            start('2026-12-03T18:00:00.000Z'),
            line({ pid: 10, time: T('2026-12-03T18:00:01.000Z'), msg: 'leading' }),
            line({ pid: 10, time: T('2026-12-03T18:00:09.000Z'), msg: 'stopped leading' }),
            start('2026-12-03T18:00:10.000Z'),
            line({ pid: 12, time: T('2026-12-03T18:00:11.000Z'), msg: 'leading' }),
            line({ pid: 12, time: T('2026-12-03T18:00:12.000Z'), msg: 'did not stop in time; exiting' }),
          ].join('\n'),
        },
        {
          replica: 1,
          kills: [],
          alive: true,
          text: [
            start('2026-12-03T18:00:05.000Z'),
            line({ pid: 11, time: T('2026-12-03T18:00:10.000Z'), msg: 'took a shard', shard: 2 }),
          ].join('\n'),
        },
      ],
      T('2026-12-03T18:00:20.000Z'),
    );
    const term = holds.find((h) => h.shard === LEADER);
    assert.deepEqual(term, {
      shard: LEADER,
      who: '0/1',
      from: T('2026-12-03T18:00:01.000Z'),
      to: T('2026-12-03T18:00:09.000Z'),
    });
    assert.deepEqual(
      holds.find((h) => h.who === '0/2'),
      { shard: LEADER, who: '0/2', from: T('2026-12-03T18:00:11.000Z'), to: T('2026-12-03T18:00:12.000Z') },
      'a process that exits when its stop takes too long holds nothing after',
    );
    const shard = holds.find((h) => h.shard === 2);
    assert.ok(shard, 'the shard held');
    assert.ok(conflict(term, shard), 'a term and a shard are two writers of its nodes');
    assert.ok(!conflict(term, { ...term, from: term.to }), 'not a process with itself');
  });

  it("judges each audited write against its sender's holds, a term covering every node, and counts overlaps", () => {
    const t0 = Date.now() - 60_000;
    const holds = [
      { shard: LEADER, who: '0/1', from: t0, to: t0 + 10_000 },
      { shard: 3, who: '1/1', from: t0 + 10_000, to: t0 + 20_000 },
      { shard: 3, who: '2/1', from: t0 + 15_000, to: t0 + 30_000 },
    ];
    const whoOfPid = new Map([
      [10, '0/1'],
      [11, '1/1'],
    ]);
    const lines: string[] = [];
    const judge = new WriteJudge({ since: t0, shards: 1, marginMs: 500, log: (l) => lines.push(l) });
    // One shard of one: every node is in shard 0, so 1/1's hold of shard 3 covers none of them.
    const w = (pid: number | null, at: number) => ({ at, pid, node: 'kwok-gpu-1', verb: 'create' });
    const outside = judge.judge(
      [w(10, t0 + 5_000), w(10, t0 + 11_000), w(11, t0 + 12_000), w(12, Date.now()), w(null, t0 + 1)],
      { holds, whoOfPid },
    );
    assert.equal(outside, 2, "the leader's write after its term, and 1/1's outside its shard");
    assert.equal(
      judge.judged,
      3,
      'the unnamed process waits for its log; a write of no fakegpu process is not judged',
    );
    assert.match(
      lines[0] ?? '',
      /by replica 0\/1 received at .*, outside its holds of shard 0, 1000 ms after its hold ended$/,
    );
    assert.match(lines[1] ?? '', /by replica 1\/1 .*, outside its holds of shard 0, which it never held$/);
    const o = overlapsOf(holds, () => undefined);
    assert.deepEqual(o, { pairs: 1, ms: 5_000 }, 'only 1/1 and 2/1 held shard 3 at once');
  });

  it('takes a write its sender sent before dying, read by the server within the margin with no other writer, as late', () => {
    const t0 = Date.now() - 60_000;
    // 1/1 held shard 0 until it died at +10 s; 2/1 took it at +16 s (after the margin, as a successor must).
    const holds = [
      { shard: 0, who: '1/1', from: t0, to: t0 + 10_000 },
      { shard: 0, who: '2/1', from: t0 + 16_000, to: t0 + 30_000 },
      { shard: LEADER, who: '0/1', from: t0 + 40_000, to: t0 + 50_000 },
    ];
    const whoOfPid = new Map([
      [11, '1/1'],
      [12, '2/1'],
    ]);
    const lines: string[] = [];
    const judge = new WriteJudge({ since: t0, shards: 1, marginMs: 5_000, log: (l) => lines.push(l) });
    const w = (pid: number, at: number) => ({ at, pid, node: 'kwok-gpu-1', verb: 'create' });
    const outside = judge.judge(
      [w(11, t0 + 10_040), w(11, t0 + 15_000), w(11, t0 + 15_500), w(11, t0 + 17_000), w(12, t0 + 45_000)],
      { holds, whoOfPid },
    );
    assert.equal(judge.late, 2, 'received 40 ms and 5 s after its death, nobody else holding the node');
    assert.equal(judge.lateMaxMs, 5_000);
    assert.equal(outside, 3, "later than the margin, during 2/1's hold, and 2/1's during the leader's term");
    assert.match(lines[0] ?? '', /replica 1\/1 .*, 5500 ms after its hold ended$/);
    assert.match(lines[1] ?? '', /replica 1\/1 .* while another held it$/);
    assert.match(lines[2] ?? '', /replica 2\/1 .* while another held it$/);

    // 3/1 held the node between 1/1's end and this write's arrival, then was gone: a newer writer's
    // write came before it, so it is one too many though nobody holds the node when it lands.
    const j2 = new WriteJudge({ since: t0, shards: 1, marginMs: 5_000, log: () => undefined });
    const between = [
      { shard: 0, who: '1/1', from: t0, to: t0 + 10_000 },
      { shard: 0, who: '3/1', from: t0 + 10_300, to: t0 + 12_000 },
    ];
    assert.equal(j2.judge([w(11, t0 + 13_000)], { holds: between, whoOfPid }), 1);
    assert.equal(j2.late, 0);
  });
});
