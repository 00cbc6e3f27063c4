// "Did you mean": the known field name nearest to a misspelt manifest key or CSV column, by edit
// distance, and the keys the schema knows at a path of the manifest.
import { z } from 'zod';
import type { PathSegment } from './problems.js';

/** Optimal string alignment distance: insertions, deletions, substitutions, swaps of neighbours. */
export function editDistance(a: string, b: string): number {
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      let distance = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        distance = Math.min(distance, (beforePrevious[j - 2] ?? 0) + 1);
      current.push(distance);
    }
    [beforePrevious, previous] = [previous, current];
  }
  return previous[b.length] ?? 0;
}

/**
 * The known name a misspelt one most likely meant: case aside, at most one edit per three
 * characters and three in all, so that short or unrelated names get no guess.
 */
export function nearestName(name: string, known: Iterable<string>): string | undefined {
  const limit = Math.min(3, Math.floor(name.length / 3));
  let nearest: string | undefined;
  let nearestDistance = limit + 1;
  for (const candidate of known) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (distance < nearestDistance) [nearest, nearestDistance] = [candidate, distance];
  }
  return nearest;
}

/** ` (did you mean "prompt"?)`, or nothing when no known name is near. */
export function didYouMean(nearest: string | undefined): string {
  return nearest === undefined ? '' : ` (did you mean "${nearest}"?)`;
}

/** The schemas a value may match: optional and nullable wrappers removed, unions opened. */
function alternatives(schema: z.ZodType): z.ZodType[] {
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodNullable)
    return alternatives(schema.unwrap() as z.ZodType);
  if (schema instanceof z.ZodUnion) return (schema.options as z.ZodType[]).flatMap(alternatives);
  if (schema instanceof z.ZodPipe) return alternatives(schema.in as z.ZodType);
  return [schema];
}

/** The keys a mapping at `path` may have (of every mapping a union there allows). */
export function knownKeysAt(schema: z.ZodType, path: readonly PathSegment[]): string[] {
  let nodes = alternatives(schema);
  for (const segment of path) {
    nodes = nodes.flatMap((node): z.ZodType[] => {
      if (typeof segment === 'number')
        return node instanceof z.ZodArray ? alternatives(node.element as z.ZodType) : [];
      const shape = node instanceof z.ZodObject ? (node.shape as Record<string, z.ZodType>) : {};
      return Object.hasOwn(shape, segment) && shape[segment] ? alternatives(shape[segment]) : [];
    });
  }
  const keys = nodes.flatMap((node) => (node instanceof z.ZodObject ? Object.keys(node.shape) : []));
  return [...new Set(keys)];
}
