#!/usr/bin/env node
// Entry point for `npx pixelmill`: runs the compiled CLI (built by `npm install` via `prepare`).
import { existsSync } from 'node:fs';

const main = new URL('../dist/client/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write(
    'pixelmill: not built yet; run `npm install` (or `npm run build`) in the pixelmill folder\n',
  );
  process.exit(1);
}
await import(main.href);
