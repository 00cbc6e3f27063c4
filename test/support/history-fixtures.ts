// Workflow histories as JSON fixture files, for replay tests. The SDK's own JSON helpers
// (historyToJSON / historyFromJSON in @temporalio/common) fail in this install: @temporalio/common
// and @temporalio/proto each carry a copy of protobufjs, and its `instanceof Type` check rejects
// the other copy's types ("type must be a Type"). So histories are written with the generated
// History class's toObject (int64 and enums as strings, bytes as base64) and read back with
// fromObject, which gives the replayer a decoded History it takes as is.
import protos from '@temporalio/proto';

const History = protos.temporal.api.history.v1.History;
export type History = ReturnType<typeof History.fromObject>;

export interface HistoryFixture {
  workflowId: string;
  history: History;
}

/** One fixture file's text: `{ workflowId, history }`, the history as plain JSON. */
export function historyFixtureJson(workflowId: string, history: object): string {
  const plain = History.toObject(History.fromObject(history), {
    longs: String,
    enums: String,
    bytes: String,
  });
  return `${JSON.stringify({ workflowId, history: plain })}\n`;
}

export function parseHistoryFixture(text: string): HistoryFixture {
  const { workflowId, history } = JSON.parse(text) as { workflowId: string; history: object };
  return { workflowId, history: History.fromObject(history) };
}
