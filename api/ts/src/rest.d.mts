// Types of the REST client: paths and components come from src/schema.d.ts, generated from
// openapi.yaml by openapi-typescript.
import type { Client, ClientOptions } from "openapi-fetch";
import type { paths } from "./schema";

export type { paths, components, operations } from "./schema";

/** createClient returns a typed client of the observability API at baseUrl. */
export function createClient(baseUrl: string, options?: Omit<ClientOptions, "baseUrl">): Client<paths>;
