// Bounded concurrency without a dependency: the few places that need it want only this.

/** Maps `fn` over `values` with at most `limit` calls at once; results in the order of `values`. */
export async function mapLimit<T, R>(
  values: readonly T[],
  limit: number,
  fn: (value: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(values.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, values.length) }, async () => {
      while (next < values.length) {
        const index = next++;
        results[index] = await fn(values[index]!);
      }
    }),
  );
  return results;
}
