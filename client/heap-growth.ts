// How a command that builds one big heap and then exits (validate, plan) lets V8 grow it.
import { setFlagsFromString } from 'node:v8';

/**
 * V8's own, adaptive heap growth for the rest of the process, in place of bin/pixelmill.js's
 * `--heap-growing-percent=20`. That flag keeps a long run's old generation close to its live
 * size; a validate of 300,000 outputs grows its heap from 20 to 150 MB at once, and a full
 * collection at every 20% of growth was half its CPU (10 collections; BENCHMARKS.md, issue #40).
 * Unlike the young generation's size, fixed when the heap is made, V8 reads this flag at every
 * collection, so setting it here takes effect (0 is V8's default).
 */
export function growHeapAdaptively(): void {
  setFlagsFromString('--heap-growing-percent=0');
}
