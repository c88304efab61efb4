/** The API versions: the same routes and handlers under each prefix, with each version's schemas and mappers. */
export type ApiVersion = 'v1' | 'v2';
export const API_VERSIONS: readonly ApiVersion[] = ['v1', 'v2'];

export function apiPrefix(version: ApiVersion): string {
  return `/api/${version}`;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** the API version of the routes registered on this (prefixed) instance; absent outside the API */
    apiVersion: ApiVersion;
  }
}

/** The version whose routes `api` registers (the app decorates each version's prefixed scope). */
export function apiVersionOf(api: { apiVersion?: ApiVersion }): ApiVersion {
  if (api.apiVersion === undefined) throw new Error('routes registered outside a versioned API scope');
  return api.apiVersion;
}
