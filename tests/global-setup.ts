import type { TestProject } from "vitest/node";
import { buildProductionServer, openTestDatabaseServer } from "./helpers/database-server";

declare module "vitest" {
  export interface ProvidedContext {
    /** A PostgreSQL server on which tests create their own databases. */
    databaseServerUrl: string;
  }
}

export default async function setup(project: TestProject) {
  buildProductionServer();
  const server = await openTestDatabaseServer();
  project.provide("databaseServerUrl", server.url);
  return () => server.stop();
}
