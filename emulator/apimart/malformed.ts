// The `faults.malformed_response_rate` fault: a successful answer to a task query (GET
// /v1/tasks/{id} or POST /v1/tasks/batch) turned into one of the malformed answers real gateways
// and drifting services give. Submit answers are never malformed: a garbled acknowledgement leaves
// the client unable to know whether a task was created, and with no idempotency key in the API
// every retry of it is a second, billed task (docs/emulator.md, RELIABILITY.md).
//
// The answer stays HTTP 200 with a correct content-length; only the JSON is wrong:
//   truncated_json   the body cut in the middle (what a proxy that fixed up the length would pass on)
//   extra_fields     unexpected fields in the envelope and in every task or item (must be accepted)
//   unknown_status   every task state replaced by "in_progress", a status seen in the wild that is
//                    in no documented set: it must be treated as not finished
import { TASK_STATES } from './wire.js';

export const MALFORMED_KINDS = ['truncated_json', 'extra_fields', 'unknown_status'] as const;
export type MalformedKind = (typeof MALFORMED_KINDS)[number];

export const UNKNOWN_STATUS = 'in_progress';
const KNOWN_STATES: ReadonlySet<string> = new Set(TASK_STATES);
/** What a task in an unknown, unfinished state cannot carry yet. */
const TERMINAL_FIELDS = ['result', 'error', 'completed', 'actual_time'];

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `{code, data}` of a GET (data is a task) or a batch (data is a list of `{id, status}`). */
function mapData(envelope: unknown, each: (entry: Json) => Json): unknown {
  if (!isObject(envelope)) return envelope;
  const { data } = envelope;
  if (Array.isArray(data))
    return { ...envelope, data: data.map((item) => (isObject(item) ? each(item) : item)) };
  return isObject(data) ? { ...envelope, data: each(data) } : envelope;
}

function withUnknownStatus(entry: Json): Json {
  if (typeof entry.status !== 'string' || !KNOWN_STATES.has(entry.status)) return entry;
  const unfinished: Json = { ...entry, status: UNKNOWN_STATUS };
  for (const field of TERMINAL_FIELDS) delete unfinished[field];
  return unfinished;
}

function withExtraFields(entry: Json): Json {
  return { ...entry, x_trace: { region: 'emulator-1', shard: 7 }, deprecated_eta: null, tags: ['chaos'] };
}

/** The body text to send instead of `JSON.stringify(envelope)`. */
export function malformedBody(envelope: unknown, kind: MalformedKind): string {
  switch (kind) {
    case 'truncated_json': {
      const json = JSON.stringify(envelope);
      return json.slice(0, Math.max(1, Math.floor(json.length / 2)));
    }
    case 'extra_fields': {
      const extended = mapData(envelope, withExtraFields);
      return JSON.stringify(
        isObject(extended) ? { ...extended, request_id: 'req_emulator', warnings: [] } : extended,
      );
    }
    case 'unknown_status':
      return JSON.stringify(mapData(envelope, withUnknownStatus));
  }
}
