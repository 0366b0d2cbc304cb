#!/usr/bin/env node
// Copies the built web UI (packages/ui/dist) into packages/server/dist/ui, so that the server
// package carries the UI it serves at / when it is installed from a tarball (docs/architecture.md
// "Packages"). Part of `npm run build`, after the UI's own build.
import { cpSync, existsSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const from = fileURLToPath(new URL('../packages/ui/dist/', import.meta.url));
const to = fileURLToPath(new URL('../packages/server/dist/ui/', import.meta.url));
if (!existsSync(`${from}index.html`)) {
  console.error(`copy-ui: ${from}index.html is missing: build the UI first (npm run build -w @rivulet/ui)`);
  process.exit(1);
}
rmSync(to, { recursive: true, force: true });
cpSync(from, to, { recursive: true });
