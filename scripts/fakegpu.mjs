// `npm run -s fakegpu -- <args>`: the CLI from a fresh checkout, setting itself up first; a checkout
// already built from the same sources starts at once (a build takes 15 s).
import { ensureBuilt, ensureDependencies, ensureNode } from './bootstrap.mjs';

ensureNode();
ensureDependencies();
ensureBuilt();
// The CLI as `npx fakegpu` runs it, with its arguments (process.argv is the same).
await import('../bin/fakegpu.js');
