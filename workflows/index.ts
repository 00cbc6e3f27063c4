// The workflows a pixelmill worker registers. Deterministic code only (lint enforces it).
export { runWorkflow } from './run.js';
export { shardWorkflow } from './shard.js';
export { batchShardWorkflow } from './batch-shard.js';
export { governorWorkflow } from './governor.js';
export { scheduledRunWorkflow } from './scheduled-run.js';
