// The body of a create, checked as the API checks it, in its order: the top-level properties
// (additionalProperties false since 2024-05-01: input, version, webhook, webhook_events_filter,
// stream), then which model and version it names, then the input against that model's schema.
// Each stage answers with every problem it finds: 422 `invalid_fields`, or the version's own 422,
// or 404 for a model that cannot be run by name.
import type { ModelConfig } from './config.js';
import { validateInput, withDefaults } from './input-schema.js';
import { isWebhookUri } from './signing.js';
import {
  badRequest,
  inputValidationFailed,
  invalidVersion,
  notFound,
  WEBHOOK_EVENTS,
  type InvalidField,
  type WebhookEvent,
} from './wire.js';

/** Where the create came in: the model endpoint names the model in its path. */
export type CreateRoute = { kind: 'version' } | { kind: 'model'; owner: string; name: string };

export interface ValidCreate {
  model: ModelConfig;
  /** What the prediction reports: the version id, or "hidden" when an official model runs by name. */
  version: string;
  /** As sent (the prediction echoes it). */
  input: Record<string, unknown>;
  /** With the schema's defaults: what the model runs with. */
  effectiveInput: Record<string, unknown>;
  webhook: string | null;
  /** The events to send; null when no webhook. */
  events: WebhookEvent[] | null;
}

export type ParsedJson =
  { kind: 'empty' } | { kind: 'too_large' } | { kind: 'invalid_json' } | { kind: 'json'; value: unknown };

export interface CreateOptions {
  models: readonly ModelConfig[];
  requireHttps: boolean;
  defaultEvents: readonly WebhookEvent[];
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

const ALLOWED = {
  version: ['input', 'version', 'webhook', 'webhook_events_filter', 'stream'],
  model: ['input', 'webhook', 'webhook_events_filter', 'stream'],
};

export function validateCreate(body: ParsedJson, route: CreateRoute, options: CreateOptions): ValidCreate {
  if (body.kind === 'too_large') throw badRequest('Request body too large.');
  if (body.kind === 'invalid_json')
    throw badRequest('JSON parse error - the request body is not valid JSON.');
  const value = body.kind === 'json' ? body.value : {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw inputValidationFailed([
      {
        type: 'invalid_type',
        field: '',
        description: `Invalid type. Expected: object, given: ${typeName(value)}`,
      },
    ]);
  }
  const fields = value as Record<string, unknown>;
  const problems: InvalidField[] = [];
  const invalidType = (field: string, expected: string): void => {
    problems.push({
      type: 'invalid_type',
      field,
      description: `Invalid type. Expected: ${expected}, given: ${typeName(fields[field])}`,
    });
  };

  if (fields.input === undefined)
    problems.push({ type: 'required', field: '', description: 'input is required' });
  if (route.kind === 'version' && fields.version === undefined)
    problems.push({ type: 'required', field: '', description: 'version is required' });
  for (const key of Object.keys(fields)) {
    if (!ALLOWED[route.kind].includes(key))
      problems.push({
        type: 'additional_property_not_allowed',
        field: '',
        description: `Additional property ${key} is not allowed`,
      });
  }
  const input = fields.input;
  if (input !== undefined && (typeof input !== 'object' || input === null || Array.isArray(input)))
    invalidType('input', 'object');
  if (route.kind === 'version' && fields.version !== undefined && typeof fields.version !== 'string')
    invalidType('version', 'string');
  const webhook = fields.webhook;
  if (webhook !== undefined) {
    if (typeof webhook !== 'string') invalidType('webhook', 'string');
    else if (!isWebhookUri(webhook, options.requireHttps))
      problems.push({
        type: 'format',
        field: 'webhook',
        description: `Does not match format '${options.requireHttps ? 'https uri' : 'uri'}'`,
      });
  }
  const filter = fields.webhook_events_filter;
  if (filter !== undefined) {
    if (!Array.isArray(filter)) invalidType('webhook_events_filter', 'array');
    else
      filter.forEach((event: unknown, i) => {
        if (!(WEBHOOK_EVENTS as readonly unknown[]).includes(event))
          problems.push({
            type: 'enum',
            field: `webhook_events_filter.${i}`,
            description: `webhook_events_filter.${i} must be one of the following: ${WEBHOOK_EVENTS.map((e) => `"${e}"`).join(', ')}`,
          });
      });
  }
  if (fields.stream !== undefined && typeof fields.stream !== 'boolean') invalidType('stream', 'boolean');
  if (problems.length > 0) throw inputValidationFailed(problems);

  const { model, version } =
    route.kind === 'model'
      ? byName(route.owner, route.name, options.models)
      : byVersion(fields.version as string, options.models);
  const sent = input as Record<string, unknown>;
  const inputProblems = validateInput(sent, model.input);
  if (inputProblems.length > 0) throw inputValidationFailed(inputProblems);

  const hook = typeof webhook === 'string' ? webhook : null;
  return {
    model,
    version,
    input: sent,
    effectiveInput: withDefaults(sent, model.input),
    webhook: hook,
    events:
      hook === null
        ? null
        : filter === undefined
          ? [...options.defaultEvents]
          : [...new Set(filter as WebhookEvent[])],
  };
}

/** POST /v1/models/{owner}/{name}/predictions runs official models only; others are not found there. */
function byName(
  owner: string,
  name: string,
  models: readonly ModelConfig[],
): { model: ModelConfig; version: string } {
  const model = models.find((m) => m.name === `${owner}/${name}`);
  if (!model || !model.official) throw notFound();
  return { model, version: 'hidden' };
}

/** `version` as the API reads it: `owner/name` (official models), `owner/name:<id>`, or `<id>`. */
function byVersion(version: string, models: readonly ModelConfig[]): { model: ModelConfig; version: string } {
  const colon = version.indexOf(':');
  const name = colon < 0 ? (version.includes('/') ? version : undefined) : version.slice(0, colon);
  const id = colon < 0 ? (version.includes('/') ? undefined : version) : version.slice(colon + 1);
  if (id !== undefined) {
    const model = /^[0-9a-f]{64}$/.test(id) ? models.find((m) => m.versions.includes(id)) : undefined;
    if (!model || (name !== undefined && model.name !== name)) throw invalidVersion();
    return { model, version: id };
  }
  const model = models.find((m) => m.name === name);
  // A community model must be run at a version; only official models run by bare name.
  if (!model || !model.official) throw invalidVersion();
  return { model, version: 'hidden' };
}
