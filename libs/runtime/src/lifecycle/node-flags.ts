/**
 * The V8 flags every service process runs with.
 *
 * `--max-semi-space-size=32`: a young generation of 32 MiB per semi-space
 * (V8's default here is 16). Almost everything a request allocates (the
 * parsed body, envelopes, encoded records) dies young; a larger young
 * generation collects it in fewer scavenges that cost no more each. Gateway
 * bench, Kafka tier, concurrency 8, three interleaved pairs: 30.3/31.7/29.3
 * -> 26.2/27.0/26.2 us of CPU per event (64 MiB measured no better). The
 * price is at most 32 MiB more resident memory per process.
 *
 * V8 sizes its heap only at start-up (`v8.setFlagsFromString` is too late),
 * so the flags go on the command line: the image's NODE_OPTIONS and
 * `npm start` carry the same value (tools/deploy/src/dockerfile.test.ts holds
 * them to it), and whatever starts a service process in tests and benches
 * passes these.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=32'];
