/**
 * The fleet's page, plain HTML, CSS and script with no build step and nothing fetched from elsewhere:
 * it asks `/ui/state` every two seconds and redraws when the state is newer. Each GPU is an SVG cell
 * (`data-node`, `data-state`), each total and scorecard figure an element with an id, so a browser test
 * reads what a person sees.
 */
export const UI_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>fakegpu fleet</title>
<style>
body { font: 13px system-ui, sans-serif; margin: 16px; color: #222; }
h1 { font-size: 18px; margin: 0 0 4px; }
#status { color: #666; margin-bottom: 8px; }
.legend span.key { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 14px; vertical-align: middle; }
.wrap { display: flex; gap: 28px; align-items: flex-start; margin-top: 10px; }
#grid { flex: 1; min-width: 0; }
.group h3 { font-size: 12px; margin: 8px 0 2px; color: #444; font-weight: 600; }
.bars { display: grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); column-gap: 16px; }
.bars h3 { margin-top: 4px; }
table { border-collapse: collapse; }
td, th { padding: 2px 8px; }
th { text-align: left; font-weight: normal; color: #555; }
td { text-align: right; font-variant-numeric: tabular-nums; }
</style>
</head>
<body>
<h1>fakegpu fleet</h1>
<div id="status">loading…</div>
<div class="legend" id="legend"></div>
<div class="wrap"><div id="grid"></div><div><h3>Scorecard</h3><table id="score"></table></div></div>
<script>
const COLOR = { f: '#d9ead3', a: '#3c78d8', m: '#8e7cc3', t: '#f1c232', x: '#cc0000' };
const NAME = { f: 'free', a: 'allocated', m: 'MIG-partitioned', t: 'tainted', x: 'faulted' };
const KEY = { free: 'f', allocated: 'a', mig: 'm', tainted: 't', faulted: 'x' };
const FIGURES = [
  ['nodes', 'nodes'], ['gpus', 'GPUs'], ['allocated', 'allocated'], ['free', 'free'], ['tainted', 'tainted'],
  ['nodesFull', 'nodes full'], ['nodesPartial', 'nodes partly used'], ['nodesEmpty', 'nodes empty'],
  ['strandedGpus', 'stranded GPUs'], ['fragmentation', 'fragmentation'],
  ['migFreeSlices', 'MIG free slices'], ['migStrandedSlices', 'MIG stranded slices'],
  ['gpuNicClaims', 'GPU+NIC claims'], ['gpuNicAligned', '… on one PCIe root'],
  ['multiGpuClaims', 'multi-GPU claims'], ['multiGpuCrossNuma', '… across NUMA nodes'],
  ['computeDomains', 'ComputeDomains'], ['computeDomainsSplit', '… across cliques'],
  ['claimsOnTainted', 'claims on tainted devices'], ['podsEvicted', 'pods evicted'],
];
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const CELL = 7, GAP = 1, PER_ROW = 32;

function nodeSvg(nodes) {
  const cols = 4;
  const w = cols * (CELL + GAP) + 4;
  const h = Math.max(...nodes.map((n) => Math.ceil(n.gpus.length / cols))) * (CELL + GAP) + 4;
  const rows = Math.ceil(nodes.length / PER_ROW);
  const W = Math.min(nodes.length, PER_ROW) * w, H = rows * h;
  let out = '<svg viewBox="0 0 ' + W + ' ' + H + '" width="' + W + '" height="' + H + '" style="max-width:100%;height:auto">';
  nodes.forEach((n, i) => {
    const x0 = (i % PER_ROW) * w, y0 = Math.floor(i / PER_ROW) * h;
    out += '<g data-node="' + esc(n.name) + '"><title>' + esc(n.name) + '</title>';
    [...n.gpus].forEach((s, j) => {
      const x = x0 + (j % cols) * (CELL + GAP), y = y0 + Math.floor(j / cols) * (CELL + GAP);
      out += '<rect data-state="' + NAME[s] + '" x="' + x + '" y="' + y + '" width="' + CELL + '" height="' + CELL + '" fill="' + COLOR[s] + '"/>';
    });
    out += '</g>';
  });
  return out + '</svg>';
}

function groupBar(g) {
  const total = Object.values(g.counts).reduce((a, b) => a + b, 0) || 1;
  let x = 0, out = '<svg width="200" height="12">';
  for (const [state, k] of Object.entries(KEY)) {
    const w = (g.counts[state] / total) * 200;
    out += '<rect data-state="' + state + '" data-count="' + g.counts[state] + '" x="' + x + '" y="0" width="' + w + '" height="12" fill="' + COLOR[k] + '"/>';
    x += w;
  }
  return out + '</svg>';
}

function render(s) {
  document.getElementById('status').textContent =
    s.totals.nodes + ' nodes, ' + Object.keys(KEY).reduce((a, k) => a + s.totals[k], 0) + ' GPUs; as of ' + s.at;
  document.getElementById('legend').innerHTML = Object.entries(KEY)
    .map(([state, k]) => '<span class="key" style="background:' + COLOR[k] + '"></span>' + NAME[k] + ' <b id="count-' + state + '">' + s.totals[state] + '</b>')
    .join('');
  let grid = '';
  if (s.nodes) {
    const groups = new Map();
    for (const n of s.nodes) (groups.get(n.group) || groups.set(n.group, []).get(n.group)).push(n);
    for (const [name, nodes] of groups)
      grid += '<div class="group" data-group="' + esc(name) + '"><h3>' + esc(name || 'nodes') + ' (' + nodes.length + ')</h3>' + nodeSvg(nodes) + '</div>';
  } else {
    grid += '<div class="bars">';
    for (const g of s.groups)
      grid += '<div class="group" data-group="' + esc(g.name) + '"><h3>' + esc(g.name) + ' (' + g.nodes + ' nodes)</h3>' + groupBar(g) + '</div>';
    grid += '</div>';
  }
  document.getElementById('grid').innerHTML = grid;
  const f = s.scorecard.cluster;
  document.getElementById('score').innerHTML = FIGURES
    .map(([k, label]) => '<tr><th>' + esc(label) + '</th><td id="score-' + k + '">' + f[k] + '</td></tr>')
    .join('');
}

let last = '';
async function tick() {
  try {
    const r = await fetch('/ui/state', { cache: 'no-store' });
    if (r.ok) {
      const s = await r.json();
      if (s.at !== last) { last = s.at; render(s); }
    } else document.getElementById('status').textContent = 'the fleet is starting';
  } catch (e) {
    document.getElementById('status').textContent = 'the fleet is not reachable';
  }
  setTimeout(tick, 2000);
}
tick();
</script>
</body>
</html>
`;
