/**
 * The API reference's view of the OpenAPI document (lib/api/openapi.ts, itself generated from the
 * zod schemas): endpoints with their parameters and responses, every object's fields, and example
 * bodies built from the schemas' own examples. Pure: the page renders what this returns.
 */

export type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  description?: string;
  example?: unknown;
  default?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  additionalProperties?: unknown;
};
type Parameter = { name: string; in: string; required?: boolean; description?: string; schema?: JsonSchema };
type Response = { description: string; content?: Record<string, { schema?: JsonSchema }> };
type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  parameters?: Parameter[];
  responses?: Record<string, Response>;
};
export type OpenApiDocument = {
  info?: { description?: string };
  servers?: { url: string }[];
  paths?: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, JsonSchema> };
};

/** A type as a reader should see it; `ref` names the object it is (or holds), for a link. */
export type TypeLabel = { text: string; ref?: string };
export type FieldView = { name: string; type: TypeLabel; required: boolean; description?: string };
export type ObjectView = { name: string; description?: string; fields: FieldView[] };
export type ParameterView = { name: string; in: string; required: boolean; type: TypeLabel; description?: string };
export type ResponseView = { status: string; description: string; contentType?: string; body?: TypeLabel };
export type EndpointView = {
  id: string;
  method: string;
  path: string;
  summary: string;
  description?: string;
  parameters: ParameterView[];
  success: ResponseView[];
  errors: ResponseView[];
};

const refName = (ref: string) => ref.slice(ref.lastIndexOf("/") + 1);

export function typeLabel(schema: JsonSchema | undefined): TypeLabel {
  if (!schema) return { text: "any" };
  if (schema.$ref) return { text: refName(schema.$ref), ref: refName(schema.$ref) };
  if (schema.enum) return { text: `one of ${schema.enum.map((value) => JSON.stringify(value)).join(", ")}` };
  const types = ([] as string[]).concat(schema.type ?? []);
  const nullable = types.includes("null");
  const base = types.find((type) => type !== "null") ?? "any";
  let label: TypeLabel;
  if (base === "array") {
    const item = typeLabel(schema.items);
    label = { text: `array of ${item.text}`, ref: item.ref };
  } else if (base === "object" && schema.additionalProperties !== undefined && !schema.properties) {
    label = { text: "object (free-form)" };
  } else {
    label = { text: schema.format ? `${base} (${schema.format})` : base };
  }
  return nullable ? { ...label, text: `${label.text} or null` } : label;
}

/** Every named object of the document with its fields, in the document's order. */
export function objectViews(document: OpenApiDocument): ObjectView[] {
  return Object.entries(document.components?.schemas ?? {}).map(([name, schema]) => ({
    name,
    description: schema.description,
    fields: Object.entries(schema.properties ?? {}).map(([field, property]) => ({
      name: field,
      type: typeLabel(property),
      required: schema.required?.includes(field) ?? false,
      description: property.description,
    })),
  }));
}

/** Every operation, success responses apart from error responses. */
export function endpointViews(document: OpenApiDocument): EndpointView[] {
  return Object.entries(document.paths ?? {}).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => {
      const responses = Object.entries(operation.responses ?? {}).map(([status, response]): ResponseView => {
        const [contentType, media] = Object.entries(response.content ?? {})[0] ?? [];
        return {
          status,
          description: response.description,
          contentType,
          body: media?.schema ? typeLabel(media.schema) : undefined,
        };
      });
      return {
        id: operation.operationId ?? `${method}-${path}`,
        method: method.toUpperCase(),
        path,
        summary: operation.summary ?? "",
        description: operation.description,
        parameters: (operation.parameters ?? []).map((parameter) => ({
          name: parameter.name,
          in: parameter.in,
          required: parameter.required ?? false,
          type: typeLabel(parameter.schema),
          description: parameter.description,
        })),
        success: responses.filter(({ status }) => status < "400"),
        errors: responses.filter(({ status }) => status >= "400"),
      };
    }),
  );
}

/**
 * An example value of a schema from the examples its fields carry: the first enum value, one
 * array item, and a plain value of the type where no example is given.
 */
export function exampleOf(document: OpenApiDocument, schema: JsonSchema | undefined): unknown {
  if (!schema) return null;
  if (schema.$ref) return exampleOf(document, document.components?.schemas?.[refName(schema.$ref)]);
  if (schema.example !== undefined) return schema.example;
  if (schema.enum) return schema.enum[0];
  const type = ([] as string[]).concat(schema.type ?? []).find((candidate) => candidate !== "null");
  switch (type) {
    case "object":
      return Object.fromEntries(
        Object.entries(schema.properties ?? {}).map(([name, property]) => [name, exampleOf(document, property)]),
      );
    case "array":
      return [exampleOf(document, schema.items)];
    case "integer":
    case "number":
      return 0;
    case "boolean":
      return true;
    case "string":
      return schema.format === "date-time" ? "2026-11-02T09:30:00.000Z" : "string";
    default:
      return null;
  }
}
