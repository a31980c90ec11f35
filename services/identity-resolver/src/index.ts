/**
 * The identity resolver as a library of its composition parts: what main.ts
 * and the standalone stack start, what svcctl's replay runs, and processBatch
 * for other suites' test fixtures. The identity schema's shared code is in
 * @svc/identity.
 */
export { resolverConfigSpec, resolverOwnConfigSpec } from './config';
export { resolverMetrics, type ResolverMetrics } from './metrics';
export { consumersForPool, startResolver, type RunningResolver, type StartResolverOptions } from './start';
export { StallWatch, UnprovenFailureError, createResolverHandler, type ResolverDeps, type ResolverTopics } from './resolver';
export { processBatch, type BatchOptions, type BatchOutcome } from './process-batch';
export { replayProjections, type ReplayOptions, type ReplayReport } from './replay';
export { resolverService } from './service';
export { carryOutUnmerge, startUnmerging, envelopeOf, type UnmergeOutcome } from './unmerge';
export { restateChunk, startRestatingPhones, RESTATEMENT_ACTOR, type RestatementOutcome } from './phone-restatement';
