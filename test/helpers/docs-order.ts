/** An operation of an OpenAPI document, as far as running it from the top needs. */
export interface DocOperation {
  tags?: string[];
  description?: string;
  parameters?: { in: string; name: string; required?: boolean; example?: unknown; schema?: { default?: unknown } }[];
  requestBody?: { required?: boolean; content: Record<string, { example?: unknown }> };
  security?: unknown[];
  responses: Record<string, { content?: Record<string, { examples?: Record<string, unknown> }> }>;
}
export interface Doc {
  tags?: { name: string }[];
  paths: Record<string, Record<string, DocOperation>>;
}
export interface Listed {
  method: string;
  path: string;
  op: DocOperation;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/**
 * The operations in the order a docs page lists them, as Swagger UI groups and sorts them: by tag,
 * in the order of the document's `tags` (untagged ones last); within a tag, the document's order
 * with each deletion after the tag's other operations (docs-page.ts's `deletionsLast`).
 */
export function pageOrder(doc: Doc): Listed[] {
  const groups = new Map<string, Listed[]>((doc.tags ?? []).map((t) => [t.name, []]));
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      for (const tag of op.tags?.length ? op.tags : ['default']) {
        if (!groups.has(tag)) groups.set(tag, []);
        groups.get(tag)!.push({ method, path, op });
      }
    }
  }
  return [...groups.values()].flatMap((ops) => [...ops.filter((o) => o.method !== 'delete'), ...ops.filter((o) => o.method === 'delete')]);
}
