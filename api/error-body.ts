// What an error answer's body says, read the way the providers write it: the OpenAI-style envelope
// `{error: {type, code, message}}` (the first API, OpenAI), a `detail` string (fal, Replicate,
// BFL), FastAPI's validation list `{detail: [{loc, msg, type}]}` (fal, BFL), and RFC 9457 problem
// details `{title, detail, status}` (Replicate). Anything else is no envelope: the caller quotes
// the body as it came.

export interface ErrorBody {
  apiType?: string;
  apiCode?: string;
  apiMessage?: string;
}

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** The body's error fields, or undefined when it is not a JSON error of a known shape. */
export function readErrorBody(body: string): ErrorBody | undefined {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const record = json as Record<string, unknown>;
  const error = record.error;
  if (typeof error === 'object' && error !== null && !Array.isArray(error)) {
    const { type, code, message } = error as Record<string, unknown>;
    return defined({ apiType: text(type), apiCode: text(code), apiMessage: text(message) });
  }
  if (typeof record.detail === 'string') {
    return defined({ apiType: text(record.title) ?? text(record.type), apiMessage: record.detail });
  }
  if (Array.isArray(record.detail)) {
    const messages = record.detail.map(validationIssue).filter((line): line is string => line !== undefined);
    return defined({ apiType: 'validation_error', apiMessage: messages.join('; ') || undefined });
  }
  return undefined;
}

/** One entry of FastAPI's `detail` list: `loc.path: msg`. */
function validationIssue(entry: unknown): string | undefined {
  if (typeof entry !== 'object' || entry === null) return text(entry);
  const { loc, msg } = entry as Record<string, unknown>;
  const where = Array.isArray(loc) ? loc.filter((part) => part !== 'body').join('.') : undefined;
  const what = text(msg);
  if (what === undefined) return undefined;
  return where ? `${where}: ${what}` : what;
}

function defined(body: ErrorBody): ErrorBody {
  const out: ErrorBody = {};
  if (body.apiType !== undefined) out.apiType = body.apiType;
  if (body.apiCode !== undefined) out.apiCode = body.apiCode;
  if (body.apiMessage !== undefined) out.apiMessage = body.apiMessage;
  return out;
}
