// How much Temporal history a finished run left: the run workflow and every shard workflow, each
// followed back across continue-as-new, so "largest history" is per execution (what Temporal's
// 10,240-event warning applies to) and the figures per item count them all: events, activities
// scheduled and workflow tasks completed (each a round trip through the server).
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import proto from '@temporalio/proto';
import { SHARD_SIZE, shardWorkflowId } from '../common/names.js';
import { historyChain } from './catalog-audit.js';
import { round } from './figures.js';

export interface HistoryFigures {
  /** Workflow ids (the run plus its shards). */
  workflows: number;
  /** Executions, counting each continue-as-new run. */
  executions: number;
  events_total: number;
  events_per_item: number;
  activities_per_item: number;
  workflow_tasks_per_item: number;
  largest: { events: number; workflow_id: string };
  /**
   * The run workflow's own events per shard, over all its executions: with RUN_HISTORY_LIMIT
   * (workflows/run.ts), how many shards one execution holds before it continues as new.
   */
  run_events_per_shard: number;
}

interface ExecutionCounts {
  events: number;
  activities: number;
  workflowTasks: number;
}

/** What every execution of `workflowId` holds, oldest first; none if it never started. */
async function chainEventCounts(client: Client, workflowId: string): Promise<ExecutionCounts[]> {
  const {
    EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: ACTIVITY_TASK_SCHEDULED,
    EVENT_TYPE_WORKFLOW_TASK_COMPLETED: WORKFLOW_TASK_COMPLETED,
  } = proto.temporal.api.enums.v1.EventType;
  try {
    return (await historyChain(client, workflowId)).map(({ history }) => {
      const events = history.events ?? [];
      const count = (type: number): number => events.filter((event) => event.eventType === type).length;
      return {
        events: events.length,
        activities: count(ACTIVITY_TASK_SCHEDULED),
        workflowTasks: count(WORKFLOW_TASK_COMPLETED),
      };
    });
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
    const shards = Math.ceil(items / SHARD_SIZE);
    const ids = [runWorkflowId];
    for (let shard = 0; shard < shards; shard++) ids.push(shardWorkflowId(runWorkflowId, shard));
    const figures: HistoryFigures = {
      workflows: ids.length,
      executions: 0,
      events_total: 0,
      events_per_item: 0,
      activities_per_item: 0,
      workflow_tasks_per_item: 0,
      largest: { events: 0, workflow_id: '' },
      run_events_per_shard: 0,
    };
    let activities = 0;
    let workflowTasks = 0;
    let runEvents = 0;
    for (const id of ids) {
      for (const execution of await chainEventCounts(client, id)) {
        figures.executions++;
        figures.events_total += execution.events;
        activities += execution.activities;
        workflowTasks += execution.workflowTasks;
        if (execution.events > figures.largest.events)
          figures.largest = { events: execution.events, workflow_id: id };
        if (id === runWorkflowId) runEvents += execution.events;
      }
    }
    const perItem = (total: number): number => (items > 0 ? round(total / items, 2) : 0);
    figures.events_per_item = perItem(figures.events_total);
    figures.activities_per_item = perItem(activities);
    figures.workflow_tasks_per_item = perItem(workflowTasks);
    figures.run_events_per_shard = round(runEvents / Math.max(1, shards), 1);
    return figures;
  } finally {
    await connection.close();
  }
}
