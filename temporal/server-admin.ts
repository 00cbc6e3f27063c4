// Cluster set-up a run depends on: the namespace exists and the search attributes it writes are
// registered. Idempotent, so it runs on every start against a reused server too: a persisted
// server ignores `--search-attribute` flags for a database created earlier.
import { Connection, isGrpcServiceError } from '@temporalio/client';
import { setTimeout as sleep } from 'node:timers/promises';
import { UserError } from '../common/errors.js';

export type SearchAttributeType = 'Text' | 'Keyword' | 'Int' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList';

export interface SearchAttributeSpec {
  name: string;
  type: SearchAttributeType;
}

// temporal.api.enums.v1.IndexedValueType; @temporalio/proto is not a direct dependency.
export const INDEXED_VALUE_TYPES: Record<SearchAttributeType, number> = {
  Text: 1,
  Keyword: 2,
  Int: 3,
  Double: 4,
  Bool: 5,
  Datetime: 6,
  KeywordList: 7,
};

type Retention = NonNullable<
  Parameters<Connection['workflowService']['registerNamespace']>[0]['workflowExecutionRetentionPeriod']
>;
/** Closed runs stay visible for a week. protobufjs encodes a plain number into the int64 field. */
const RETENTION = { seconds: 7 * 24 * 3600 } as unknown as Retention;

const GRPC_NOT_FOUND = 5;
const GRPC_ALREADY_EXISTS = 6;

function typeName(value: number): string {
  return Object.entries(INDEXED_VALUE_TYPES).find(([, code]) => code === value)?.[0] ?? `type ${value}`;
}

/** Also takes a Client's `connection`: only the operator service is used. */
export async function ensureSearchAttributes(
  connection: Pick<Connection, 'operatorService'>,
  namespace: string,
  wanted: readonly SearchAttributeSpec[],
): Promise<void> {
  if (wanted.length === 0) return;
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const existing = new Map(
    Object.entries(customAttributes ?? {}).map(([name, type]) => [name, Number(type)]),
  );
  const missing: Record<string, number> = {};
  for (const { name, type } of wanted) {
    const code = INDEXED_VALUE_TYPES[type];
    const current = existing.get(name);
    if (current === undefined) missing[name] = code;
    else if (current !== code) {
      throw new UserError(
        'search_attribute_conflict',
        `search attribute ${name} exists in namespace ${namespace} as ${typeName(current)}, but pixelmill needs ${type}`,
      );
    }
  }
  if (Object.keys(missing).length === 0) return;
  try {
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
  } catch (error) {
    // Another invocation may have added them in the meantime.
    if (!(isGrpcServiceError(error) && error.code === GRPC_ALREADY_EXISTS)) throw error;
  }
}

/**
 * Registers `namespace` when missing and waits until the frontend serves it: a new namespace
 * reaches the frontend's namespace cache only on its next refresh, some seconds later.
 */
export async function ensureNamespace(
  connection: Pick<Connection, 'workflowService'>,
  namespace: string,
  timeoutMs = 30_000,
): Promise<void> {
  const service = connection.workflowService;
  try {
    await service.describeNamespace({ namespace });
    return;
  } catch (error) {
    if (!(isGrpcServiceError(error) && error.code === GRPC_NOT_FOUND)) throw error;
  }
  try {
    await service.registerNamespace({ namespace, workflowExecutionRetentionPeriod: RETENTION });
  } catch (error) {
    if (!(isGrpcServiceError(error) && error.code === GRPC_ALREADY_EXISTS)) throw error;
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await service.listWorkflowExecutions({ namespace, pageSize: 1 });
      return;
    } catch (error) {
      if (!(isGrpcServiceError(error) && error.code === GRPC_NOT_FOUND) || Date.now() > deadline) throw error;
    }
    await sleep(500);
  }
}
