// The REST client: openapi-fetch, typed by src/schema.d.ts (generated from openapi.yaml).
import createFetchClient from "openapi-fetch";

/** createClient returns a typed client of the observability API at baseUrl. */
export function createClient(baseUrl, options = {}) {
  return createFetchClient({ baseUrl, ...options });
}
