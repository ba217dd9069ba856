import { AppError } from "../errors";

/**
 * A small router for path templates such as `/orders/{id}/files/{fileId}`: each `{name}` matches
 * one non-empty path segment, every other character matches itself. Compiled once, from the route
 * table (lib/api/routes.ts), into one regular expression per template.
 */

export type Match<Route> = { route: Route; params: Record<string, string> };

type Compiled<Route> = { pattern: RegExp; names: string[]; route: Route };

/** The `{name}`s of a template, in order. */
export function templateNames(template: string): string[] {
  return [...template.matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((match) => match[1]!);
}

/** The template as an anchored regular expression, one capture group per `{name}`. */
export function templatePattern(template: string): RegExp {
  const source = template
    .split(/(\{[A-Za-z_][A-Za-z0-9_]*\})/)
    .map((part, index) => (index % 2 ? "([^/]+)" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${source}$`);
}

/**
 * A matcher over `routes` (templates relative to `base`): the route whose template matches a path,
 * with its decoded path parameters. One entry per path (its methods are the entry's): two
 * templates of the same shape are a mistake in the table, refused here.
 */
export function compileRouteTable<Route extends { path: string }>(
  base: string,
  routes: readonly Route[],
  /** The error for a path segment that does not decode. */
  malformed: () => AppError = () =>
    new AppError("invalid_request", "The request path has an invalid percent-encoding."),
) {
  const compiled: Compiled<Route>[] = routes.map((route) => ({
    pattern: templatePattern(base + route.path),
    names: templateNames(route.path),
    route,
  }));
  const templates = new Set<string>();
  for (const { route } of compiled) {
    const shape = route.path.replace(/\{[^}]+\}/g, "{}");
    if (templates.has(shape)) throw new Error(`Two routes share the path ${route.path}.`);
    templates.add(shape);
  }
  /** The route at `path` (without query), or undefined. */
  return function match(path: string): Match<Route> | undefined {
    for (const { pattern, names, route } of compiled) {
      const values = pattern.exec(path);
      if (!values) continue;
      const params: Record<string, string> = {};
      names.forEach((name, index) => (params[name] = decodeSegment(values[index + 1]!, malformed)));
      return { route, params };
    }
    return undefined;
  };
}

function decodeSegment(segment: string, malformed: () => AppError): string {
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    throw malformed();
  }
}
