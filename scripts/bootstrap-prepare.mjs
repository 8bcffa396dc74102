// npm's `prepare` hook (runs after `npm ci`/`npm install`): compile so `npx fakegpu` works at once.
import { build, ensureNode, markDependencies } from './bootstrap.mjs';

ensureNode();
build();
markDependencies();
