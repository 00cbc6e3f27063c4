// `pixelmill setup`: makes the namespace named by Temporal's envconfig ready for pixelmill runs on
// a cluster: the namespace itself (self-hosted) and pixelmill's custom search attributes
// (common/search-attributes.ts), through the operator service. Idempotent: a second run says
// they exist. Without them a run still works, but `list` shows no counts and nothing can be
// found by manifest.
//
// Temporal Cloud (an address under .tmprl.cloud, or an API key) manages search attributes in its
// control plane, not through a namespace's endpoint: there setup adds nothing, and names the
// `tcld` command (or the Cloud UI page) for each missing attribute, one line each.
import { Connection, isGrpcServiceError } from '@temporalio/client';
import type { Command } from 'commander';
import { UserError } from '../../common/errors.js';
import { PIXELMILL_SEARCH_ATTRIBUTES } from '../../common/search-attributes.js';
import { connectClient, resolveTemporalTarget, type TemporalEndpoint } from '../../temporal/connection.js';
import {
  ensureNamespace,
  INDEXED_VALUE_TYPES,
  type SearchAttributeSpec,
} from '../../temporal/server-admin.js';
import { examples } from './with-run.js';

const GRPC_NOT_FOUND = 5;
const GRPC_PERMISSION_DENIED = 7;
const GRPC_UNIMPLEMENTED = 12;

export interface AttributeCheck {
  missing: SearchAttributeSpec[];
  present: SearchAttributeSpec[];
  /** Registered under pixelmill's name with another type. */
  conflicts: { name: string; wanted: string; actual: string }[];
}

function typeName(code: number): string {
  return Object.entries(INDEXED_VALUE_TYPES).find(([, value]) => value === code)?.[0] ?? `type ${code}`;
}

/** pixelmill's attributes compared with the namespace's custom ones ({ name: IndexedValueType }). */
export function checkAttributes(
  existing: Record<string, number>,
  wanted: readonly SearchAttributeSpec[] = PIXELMILL_SEARCH_ATTRIBUTES,
): AttributeCheck {
  const check: AttributeCheck = { missing: [], present: [], conflicts: [] };
  for (const spec of wanted) {
    const actual = existing[spec.name];
    if (actual === undefined) check.missing.push(spec);
    else if (actual === INDEXED_VALUE_TYPES[spec.type]) check.present.push(spec);
    else check.conflicts.push({ name: spec.name, wanted: spec.type, actual: typeName(actual) });
  }
  return check;
}

/**
 * Temporal Cloud: its namespace hosts (*.tmprl.cloud), its regional API-key endpoints
 * (*.api.temporal.io), or any API key (self-hosted clusters authenticate otherwise).
 */
export function isTemporalCloud(endpoint: Pick<TemporalEndpoint, 'connection'>): boolean {
  const host = endpoint.connection.address.replace(/:\d+$/, '').toLowerCase();
  return (
    host.endsWith('.tmprl.cloud') ||
    host.endsWith('.api.temporal.io') ||
    endpoint.connection.apiKey !== undefined
  );
}

/** The lines that tell a Cloud user how to add what is missing, one per attribute, then the UI. */
export function cloudInstructions(namespace: string, missing: readonly SearchAttributeSpec[]): string[] {
  return [
    ...missing.map(
      ({ name, type }) =>
        `tcld namespace search-attributes add --namespace ${namespace} --search-attribute ${name}=${type}`,
    ),
    `or in the Cloud UI: https://cloud.temporal.io/namespaces/${namespace}, Edit, Custom Search Attributes`,
  ];
}

function conflictProblems(namespace: string, check: AttributeCheck): string[] {
  return check.conflicts.map(
    ({ name, wanted, actual }) =>
      `${name} exists in namespace ${namespace} as ${actual}, pixelmill needs ${wanted}: remove it ` +
      `(temporal operator search-attribute remove --namespace ${namespace} --name ${name}) or use another namespace`,
  );
}

async function customAttributes(connection: Connection, namespace: string): Promise<Record<string, number>> {
  const { customAttributes: found } = await connection.operatorService.listSearchAttributes({ namespace });
  return Object.fromEntries(Object.entries(found ?? {}).map(([name, type]) => [name, Number(type)]));
}

const names = (specs: readonly SearchAttributeSpec[]): string =>
  specs.map(({ name, type }) => `${name} (${type})`).join(', ');

async function setupCloud(connection: Connection, endpoint: TemporalEndpoint): Promise<string[]> {
  const { namespace } = endpoint;
  let existing: Record<string, number>;
  try {
    existing = await customAttributes(connection, namespace);
  } catch (error) {
    if (isGrpcServiceError(error) && error.code === GRPC_NOT_FOUND) {
      throw new UserError(
        'namespace_missing',
        `namespace ${namespace} does not exist on ${endpoint.display}: create it in the Cloud UI or with \`tcld namespace create\``,
      );
    }
    // An API key may not list them: say everything that a complete setup adds.
    existing = {};
  }
  const check = checkAttributes(existing);
  if (check.conflicts.length > 0)
    throw new UserError(
      'search_attribute_conflict',
      `namespace ${namespace} is not usable as it is:`,
      conflictProblems(namespace, check),
    );
  if (check.missing.length > 0) {
    throw new UserError(
      'setup_on_cloud',
      `Temporal Cloud adds search attributes through its control plane, not through ${endpoint.display}; ` +
        `an account or namespace admin adds the ${check.missing.length} missing with:`,
      cloudInstructions(namespace, check.missing),
    );
  }
  return [`namespace ${namespace} has pixelmill's search attributes: ${names(check.present)}`];
}

async function setupSelfHosted(connection: Connection, endpoint: TemporalEndpoint): Promise<string[]> {
  const { namespace } = endpoint;
  const lines: string[] = [];
  let exists = true;
  try {
    await connection.workflowService.describeNamespace({ namespace });
  } catch (error) {
    if (!(isGrpcServiceError(error) && error.code === GRPC_NOT_FOUND)) throw error;
    exists = false;
  }
  if (!exists) {
    await ensureNamespace(connection, namespace);
    lines.push(`created namespace ${namespace} (closed runs kept 7 days)`);
  }
  const check = checkAttributes(await customAttributes(connection, namespace));
  if (check.conflicts.length > 0)
    throw new UserError(
      'search_attribute_conflict',
      `namespace ${namespace} is not usable as it is:`,
      conflictProblems(namespace, check),
    );
  if (check.missing.length === 0) {
    lines.push(`namespace ${namespace} already has pixelmill's search attributes: ${names(check.present)}`);
    return lines;
  }
  const searchAttributes = Object.fromEntries(
    check.missing.map(({ name, type }) => [name, INDEXED_VALUE_TYPES[type]]),
  ) as Parameters<Connection['operatorService']['addSearchAttributes']>[0]['searchAttributes'];
  try {
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
  } catch (error) {
    if (isGrpcServiceError(error) && [GRPC_PERMISSION_DENIED, GRPC_UNIMPLEMENTED].includes(error.code)) {
      throw new UserError(
        'setup_not_allowed',
        `${endpoint.display} refused to add search attributes (${error.details}); an admin of the cluster adds them with:`,
        check.missing.map(
          ({ name, type }) =>
            `temporal operator search-attribute create --namespace ${namespace} --name ${name} --type ${type}`,
        ),
      );
    }
    throw error;
  }
  // Read back: what the server says it has is what runs will find.
  const after = checkAttributes(await customAttributes(connection, namespace));
  if (after.missing.length > 0)
    throw new UserError(
      'setup_incomplete',
      `added, but namespace ${namespace} still lacks ${names(after.missing)}`,
    );
  lines.push(`created search attributes in namespace ${namespace}: ${names(check.missing)}`);
  if (check.present.length > 0) lines.push(`already there: ${names(check.present)}`);
  return lines;
}

/** Sets up the configured cluster's namespace; resolves to the lines to print. */
export async function setupTemporal(env: NodeJS.ProcessEnv = process.env): Promise<string[]> {
  const target = await resolveTemporalTarget(env);
  if (target.mode === 'embedded') {
    return [
      'no Temporal cluster is configured (TEMPORAL_ADDRESS or a temporal.toml profile): the local dev ' +
        'server pixelmill starts registers its search attributes itself, nothing to set up',
    ];
  }
  const { connection, close } = await connectClient(target);
  try {
    const lines = isTemporalCloud(target)
      ? await setupCloud(connection, target)
      : await setupSelfHosted(connection, target);
    return [`on ${target.display}:`, ...lines];
  } finally {
    await close();
  }
}

export function registerSetupCommand(program: Command): void {
  program
    .command('setup')
    .description("prepare the cluster's namespace for pixelmill: the namespace and its search attributes")
    .addHelpText(
      'after',
      examples(
        'TEMPORAL_ADDRESS=temporal.internal:7233 TEMPORAL_NAMESPACE=catalog pixelmill setup',
        'TEMPORAL_PROFILE=prod pixelmill setup',
      ) +
        '\n\nIdempotent: run it once per namespace, before the first run (a second run says what exists).' +
        '\nOn Temporal Cloud it adds nothing and prints the `tcld` command for each missing attribute.' +
        '\nExit codes: 0 ready, 1 error (something missing it could not add, conflicts, Temporal unreachable).',
    )
    .action(async () => {
      for (const line of await setupTemporal()) process.stdout.write(`pixelmill setup: ${line}\n`);
    });
}
