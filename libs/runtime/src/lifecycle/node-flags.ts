/**
 * The V8 flags every service process runs with.
 *
 * `--max-semi-space-size=64`: a young generation of 64 MiB per semi-space
 * (V8's default here is 16). Almost everything a request allocates (the
 * parsed body, envelopes, encoded records) dies young; a larger young
 * generation collects it in fewer scavenges that cost no more each, and
 * promotes less of what is still in flight. Gateway bench, Kafka tier,
 * interleaved pairs, CPU per event: at concurrency 8, 16 MiB (the default)
 * 30.3/31.7/29.3 us against 32 MiB 26.2/27.0/26.2, and 64 MiB no better than
 * 32; at concurrency 16 and 32, 64 MiB below 32 MiB in all six pairs (29.0/30.8
 * -> 25.8/25.4 at 16, 28.2/30.1 -> 26.9/23.8 at 32). V8 grows the young
 * generation only as far as the load needs it: at most about 100 MiB more
 * resident memory per process.
 *
 * V8 sizes its heap only at start-up (`v8.setFlagsFromString` is too late),
 * so the flags go on the command line: the image's entrypoint and
 * `npm start` carry the same value (tools/deploy/src/dockerfile.test.ts holds
 * them to it), and whatever starts a service process in tests and benches
 * passes these.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64'];
