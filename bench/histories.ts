// How much Temporal history a finished run left: the run workflow and every shard workflow, each
// followed back across continue-as-new, so "largest history" is per execution (what Temporal's
// 10,240-event warning applies to) and "events per item" counts them all.
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { SHARD_SIZE, shardWorkflowId } from '../common/names.js';
import { historyChain } from './catalog-audit.js';

export interface HistoryFigures {
  /** Workflow ids (the run plus its shards). */
  workflows: number;
  /** Executions, counting each continue-as-new run. */
  executions: number;
  events_total: number;
  events_per_item: number;
  largest: { events: number; workflow_id: string };
}

/** Event counts of every execution of `workflowId`, oldest first; none if it never started. */
async function chainEventCounts(client: Client, workflowId: string): Promise<number[]> {
  try {
    return (await historyChain(client, workflowId)).map(({ history }) => history.events?.length ?? 0);
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return [];
    throw error;
  }
}

export async function runHistoryFigures(
  address: string,
  runWorkflowId: string,
  items: number,
): Promise<HistoryFigures> {
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection, namespace: 'default' });
    const ids = [runWorkflowId];
    for (let shard = 0; shard < Math.ceil(items / SHARD_SIZE); shard++)
      ids.push(shardWorkflowId(runWorkflowId, shard));
    const figures: HistoryFigures = {
      workflows: ids.length,
      executions: 0,
      events_total: 0,
      events_per_item: 0,
      largest: { events: 0, workflow_id: '' },
    };
    for (const id of ids) {
      for (const events of await chainEventCounts(client, id)) {
        figures.executions++;
        figures.events_total += events;
        if (events > figures.largest.events) figures.largest = { events, workflow_id: id };
      }
    }
    figures.events_per_item = items > 0 ? Math.round((figures.events_total / items) * 100) / 100 : 0;
    return figures;
  } finally {
    await connection.close();
  }
}
