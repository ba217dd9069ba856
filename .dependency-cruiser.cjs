/**
 * The layers of lib/ (docs/development.md, "Layers"), held by `npm run lint`. Each layer imports only from
 * the layers below it; inside the domain layer a folder imports only the folders listed before it, so no
 * two folders import each other; and no file imports itself through others. Type-only imports count too.
 */
const ENGINES = ["db", "storage", "engine", "queue", "ratelimit"];
/** Lower first: each may import the ones before it. */
const DOMAIN = [
  "schemas",
  "security",
  "buyers",
  "auth",
  "social",
  "share-links",
  "webhooks",
  "keys",
  "orders",
  "downloads",
  "datasets",
  "exports",
  "tables",
  "explore",
  "operator",
];
const DELIVERY = ["http", "api", "sharing", "mcp", "docs", "jobs", "clients"];

const folders = (names) => `^lib/(${names.join("|")})/`;

const domainOrder = DOMAIN.slice(0, -1).map((name, index) => ({
  name: `domain-order-${name}`,
  comment: `lib/${name} is in the domain layer before ${DOMAIN.slice(index + 1).join(", ")}: it may not import them (docs/development.md, Layers).`,
  severity: "error",
  from: { path: `^lib/${name}/` },
  to: { path: folders(DOMAIN.slice(index + 1)) },
}));

module.exports = {
  forbidden: [
    {
      name: "base-imports-only-base",
      comment: "lib/*.ts is the base layer (errors, ids, clock, log, ...): it imports no folder of lib/.",
      severity: "error",
      from: { path: "^lib/[^/]+\\.ts$" },
      to: { path: "^lib/[^/]+/" },
    },
    {
      name: "engines-import-only-base",
      comment: `The engine layer (${ENGINES.join(", ")}) builds on the base only (the queue and storage on db).`,
      severity: "error",
      from: { path: folders(ENGINES) },
      to: { path: `^lib/(?!(db|storage|engine|queue|ratelimit)/)[^/]+/` },
    },
    {
      name: "engines-one-way",
      comment:
        "Inside the engine layer only the queue and storage use db; db, engine and ratelimit use no other engine.",
      severity: "error",
      from: { path: "^lib/(db|engine|ratelimit)/" },
      to: { path: "^lib/(storage|engine|queue|ratelimit|db)/", pathNot: "^lib/$1/" },
    },
    {
      name: "domain-never-imports-delivery",
      comment: `Domain folders answer with values and AppErrors; the delivery layer (${DELIVERY.join(", ")}) makes responses.`,
      severity: "error",
      from: { path: folders(DOMAIN) },
      to: { path: folders(DELIVERY) },
    },
    ...domainOrder,
    {
      name: "delivery-http-is-shared",
      comment:
        "lib/http is what every surface shares (the keyed-request pipeline, problem+json, Node bridging): it imports no other surface.",
      severity: "error",
      from: { path: "^lib/http/" },
      to: { path: folders(DELIVERY.filter((name) => name !== "http")) },
    },
    {
      name: "delivery-surfaces-apart",
      comment:
        "The API, Delta Sharing, the MCP server, the job registry and the client packages are separate surfaces: none imports another (the docs read the API's document and the MCP server's path).",
      severity: "error",
      from: { path: "^lib/(api|sharing|mcp|jobs|clients)/" },
      to: { path: "^lib/(api|sharing|mcp|docs|jobs|clients)/", pathNot: "^lib/$1/" },
    },
    {
      name: "lib-never-imports-the-app",
      comment: "lib/ is imported by the app, its pages and scripts, never the other way round.",
      severity: "error",
      from: { path: "^lib/" },
      to: { path: "^(app|components|pages|scripts)/" },
    },
    {
      name: "pages-never-import-db",
      comment:
        "Pages and components read through lib/ functions that hold the tenant boundary, never the database client.",
      severity: "error",
      from: { path: "^(app|components)/" },
      to: { path: "^lib/db/" },
    },
    {
      name: "no-circular",
      comment: "Files do not import each other in a circle: one of them is the base the others build on.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: ["(^|/)lib/db/generated/", "\\.test\\.ts$"] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    combinedDependencies: false,
  },
};

// The layers themselves, for tests/architecture/layers.test.ts (which holds docs/development.md's picture to
// them); not enumerable, so dependency-cruiser's check of its configuration does not see them.
Object.defineProperty(module.exports, "layers", {
  value: { engines: ENGINES, domain: DOMAIN, delivery: DELIVERY },
});
