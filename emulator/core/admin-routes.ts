// Where every emulator's own endpoints live (no auth, not part of any provider's API), and which of
// an emulator's admin routes a request names. Each emulator keeps its table of routes.
export const ADMIN_PREFIX = '/_emulator/';

/** Each admin route (the path after ADMIN_PREFIX) with the methods it answers, as an Allow header says them. */
export type AdminRoutes = ReadonlyMap<string, string>;

export type AdminMatch =
  { kind: 'admin'; name: string } | { kind: 'wrong_method'; pattern: string; allow: string };

/** The admin route `path` names, or undefined when it names none of `routes`. */
export function matchAdminRoute(method: string, path: string, routes: AdminRoutes): AdminMatch | undefined {
  if (!path.startsWith(ADMIN_PREFIX)) return undefined;
  const name = path.slice(ADMIN_PREFIX.length);
  const allow = routes.get(name);
  if (allow === undefined) return undefined;
  return allow.split(', ').includes(method)
    ? { kind: 'admin', name }
    : { kind: 'wrong_method', pattern: path, allow };
}
