// A model's input checked against its schema, as the API does before it creates a prediction: the
// subset of JSON Schema that image models' Cog schemas use (type, enum, minimum, maximum, required,
// default), every problem collected into the 422's `invalid_fields`.
//
// The descriptions follow gojsonschema's English messages, which the API's are ("Additional property
// inptu is not allowed" in the changelog of 2024-05-01); unknown input properties are accepted, as
// Cog's Input schemas do not forbid them (unconfirmed: docs/emulators/replicate.md).
import type { InvalidField } from './wire.js';

export type InputType = 'string' | 'integer' | 'number' | 'boolean';

export interface InputProperty {
  type: InputType;
  enum?: readonly (string | number)[] | undefined;
  minimum?: number | undefined;
  maximum?: number | undefined;
  default?: unknown;
}

export interface InputSchema {
  required: readonly string[];
  properties: Readonly<Record<string, InputProperty>>;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function matchesType(value: unknown, type: InputType): boolean {
  if (type === 'integer') return typeof value === 'number' && Number.isInteger(value);
  if (type === 'number') return typeof value === 'number' && Number.isFinite(value);
  return typeof value === type;
}

const quoted = (value: string | number): string => (typeof value === 'string' ? `"${value}"` : String(value));

/** The problems of `input` against `schema`, in the schema's property order; empty when valid. */
export function validateInput(input: Record<string, unknown>, schema: InputSchema): InvalidField[] {
  const problems: InvalidField[] = [];
  for (const name of schema.required) {
    if (input[name] === undefined)
      problems.push({ type: 'required', field: 'input', description: `${name} is required` });
  }
  for (const [name, property] of Object.entries(schema.properties)) {
    const value = input[name];
    if (value === undefined) continue;
    const field = `input.${name}`;
    if (!matchesType(value, property.type)) {
      problems.push({
        type: 'invalid_type',
        field,
        description: `Invalid type. Expected: ${property.type}, given: ${typeOf(value)}`,
      });
      continue;
    }
    if (property.enum && !property.enum.includes(value as string | number)) {
      problems.push({
        type: 'enum',
        field,
        description: `${field} must be one of the following: ${property.enum.map(quoted).join(', ')}`,
      });
    }
    if (typeof value === 'number' && property.minimum !== undefined && value < property.minimum) {
      problems.push({
        type: 'number_gte',
        field,
        description: `Must be greater than or equal to ${property.minimum}`,
      });
    }
    if (typeof value === 'number' && property.maximum !== undefined && value > property.maximum) {
      problems.push({
        type: 'number_lte',
        field,
        description: `Must be less than or equal to ${property.maximum}`,
      });
    }
  }
  return problems;
}

/** `input` with the schema's defaults filled in for what it leaves out (what the model runs with). */
export function withDefaults(input: Record<string, unknown>, schema: InputSchema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(schema.properties)) {
    if (input[name] !== undefined) out[name] = input[name];
    else if (property.default !== undefined) out[name] = property.default;
  }
  for (const [name, value] of Object.entries(input)) if (!(name in out)) out[name] = value;
  return out;
}
