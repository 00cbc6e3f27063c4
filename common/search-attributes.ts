// The custom search attributes pixelmill writes, defined once for the workflows that upsert them,
// the embedded dev server that registers them, docker-compose's set-up and the tests that query
// them. They make runs findable in the Temporal Web UI and through the visibility API, e.g.
// `PixelmillManifest = 'catalog' AND PixelmillFailed > 0`.
//
// A run and its shards carry all five: the run its totals, each shard its own share; add
// `WorkflowType = 'runWorkflow'` to a query to list runs only.
//
// Upserting an attribute the namespace does not know fails the workflow task, over and over. So a
// workflow writes them only if it was started carrying PixelmillManifest: its starter checked that
// they are registered (client/runs.ts), and a run passes the attribute on to its shards.
import { defineSearchAttributeKey, type SearchAttributePair } from '@temporalio/common';
import type { ItemCounts } from './types.js';

/** The manifest's `name` (the run id without `pixelmill/`). */
export const MANIFEST_ATTRIBUTE = defineSearchAttributeKey('PixelmillManifest', 'KEYWORD');
/** Items in the run (or in the shard). */
export const ITEMS_ATTRIBUTE = defineSearchAttributeKey('PixelmillItems', 'INT');
/** Items completed: their images stored (the report's `completed`). */
export const COMPLETED_ATTRIBUTE = defineSearchAttributeKey('PixelmillCompleted', 'INT');
/** Items that ended `failed` (the report's `failed`; expired, cancelled and skipped are not counted). */
export const FAILED_ATTRIBUTE = defineSearchAttributeKey('PixelmillFailed', 'INT');
/**
 * Credits the API charged for finished items. A Double: SQL visibility (the dev server's) has room
 * for only three custom Int attributes per namespace, and the three counts take them.
 */
export const CREDITS_ATTRIBUTE = defineSearchAttributeKey('PixelmillCredits', 'DOUBLE');

/** Every attribute with the type name the server's registration (and `temporal operator`) uses. */
export const PIXELMILL_SEARCH_ATTRIBUTES = [
  { name: MANIFEST_ATTRIBUTE.name, type: 'Keyword' },
  { name: ITEMS_ATTRIBUTE.name, type: 'Int' },
  { name: COMPLETED_ATTRIBUTE.name, type: 'Int' },
  { name: FAILED_ATTRIBUTE.name, type: 'Int' },
  { name: CREDITS_ATTRIBUTE.name, type: 'Double' },
] as const;

/** The count attributes for finished items. */
export function countAttributes(
  counts: Pick<ItemCounts, 'completed' | 'failed'>,
  creditsSpent: number,
): SearchAttributePair[] {
  return [
    { key: COMPLETED_ATTRIBUTE, value: counts.completed },
    { key: FAILED_ATTRIBUTE, value: counts.failed },
    { key: CREDITS_ATTRIBUTE, value: creditsSpent },
  ];
}
