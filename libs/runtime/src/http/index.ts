export { clientIp, isTrustedPeer, limitAddress, parseTrustedProxies } from './client-ip';
export { requireHttps } from './require-https';
export { serveHttp } from './serve';
export type { HttpServiceConfig, ServeOptions } from './serve';
export type { TrustedProxyRange } from './client-ip';
export { commonHeaders } from './common-headers';
export { CORS_ALLOWED_HEADERS, CORS_ALLOWED_METHODS, CORS_EXPOSED_HEADERS, CORS_MAX_AGE_SECONDS, cors } from './cors';
export { createApp } from './create-app';
export type { CreateAppOptions, ServiceApp } from './create-app';
export {
  declaredContentLength,
  LINGER_MS,
  payloadTooLarge,
  rejectOversizedContentLength,
  stopReading,
} from './body-limit';
export { errorHandler, methodNotAllowed, notFound } from './error-handler';
export type { ErrorMapper } from './error-handler';
export { DEFAULT_READINESS_TIMEOUT_MS, DEGRADED, healthRoutes, OPERATIONAL_PATHS, readinessFromChecks } from './health';
export type { CheckStatus, HealthRoutesOptions, ReadinessProbe, ReadinessReport } from './health';
export { HttpError, isHttpError } from './http-error';
export type { HttpErrorOptions } from './http-error';
export { JSON_CONTENT_TYPE, sendJson } from './json-response';
export { isJsonContentType, parseJson, readBounded, readJsonBody } from './read-json-body';
export type { ReadBoundedOptions, ReadJsonBodyOptions } from './read-json-body';
export { isValidRequestId, requestId } from './request-id';
export { requestTiming } from './request-timing';
export { routeLabel } from './route-label';
export { DEFAULT_SHUTDOWN_TIMEOUT_MS, startHttpServer } from './start-http-server';
export type { HttpTimeouts, RunningHttpServer, StartHttpServerOptions } from './start-http-server';
