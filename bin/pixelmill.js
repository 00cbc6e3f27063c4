#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=4 --heap-growing-percent=20 --v8-pool-size=2
// The shebang keeps memory and CPU down. MALLOC_ARENA_MAX=2: glibc gives each thread that
// allocates under contention an arena of its own (up to 8 per core), and the Temporal core's
// threads and libvips's leave most of theirs fragmented; two arenas cut a 10,000-item run's peak
// RSS by about a fifth, for 0.5 ms more CPU per image at capacity (BENCHMARKS.md). The node flags:
// a small young generation (V8 sizes it for allocation throughput, and each isolate, the
// workers', this one's and the workflow thread's, would otherwise sit on ~100 MB of it); an old
// generation that grows by 20% before its next full collection rather than by V8's adaptive
// factor (up to 4x the live heap); and two threads for V8's background work (its concurrent
// marking) rather than four, which on a small machine cost more CPU handing work between threads
// than they saved. All must be set before node starts (v8.setFlagsFromString comes too late for
// the heap, glibc reads the variable once); the Dockerfile sets them too (a test compares), and
// the benchmarks read them from this line (bench/processes.ts).
// Entry point for `npx pixelmill`: runs the compiled CLI (built by `npm install` via `prepare`).
import { existsSync } from 'node:fs';

const main = new URL('../dist/client/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write(
    'pixelmill: not built yet; run `npm install` (or `npm run build`) in the pixelmill folder\n',
  );
  process.exit(1);
}
// The AWS SDK warns on every S3 run that its releases from 2027 on need Node 22: advice for
// whoever upgrades dependencies (package.json pins a version that supports Node 20), not for users.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
await import(main.href);
