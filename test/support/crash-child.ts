import { gpuClaim, nodeState } from './node-state.js';

/**
 * One plugin step in a process of its own, so a crash point can kill it for real:
 * `crash-child.js <root> prepare|unprepare <uid> [device…]`.
 */
const [root = '', op = '', uid = '', ...devices] = process.argv.slice(2);
const { state } = nodeState(root);
state.restore();
if (op === 'prepare') await state.prepare(gpuClaim(uid, devices));
else await state.unprepare(uid);
process.stdout.write('done\n');
