export { BASE_PATH, OPENAPI_PATH, buildOpenApiDocument } from './document';
export { buildAsyncApiDocument } from './asyncapi';
export { createResponseChecker, type ReceivedResponse } from './check-response';
export { mountOpenApiDocument } from './serve';
export type { Json } from './json-schema';
export { documentedFetch } from './documented-fetch';
export { ROUTES, documentedApiRequests, prefixMatches, serviceForPath, type PublicService } from './routes';
