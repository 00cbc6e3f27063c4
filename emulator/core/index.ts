// emulator/core: the provider-neutral generation simulator the provider emulators (emulator/fal,
// emulator/replicate, emulator/bfl) are built on. emulator/apimart, the first API's, keeps its own
// task store, journal format, rate limiter and stats, and takes the rest from here: the clock,
// random source, image drawing, HTTP helpers, config plumbing, downloads, webhook delivery and
// server lifecycle. No provider vocabulary here; wire shapes, routes, auth and errors belong to
// each provider folder.
//
// What core offers (import from './core/index.js', or the module named):
// - server.ts   listen(server, host, port, provider, failure?) -> base URL; closerFor(server,
//               ...steps): an idempotent close() that drops keep-alive connections and runs the
//               steps once; RunningProviderEmulator (what start<Provider>Emulator resolves to);
//               urlHost().
// - jobs.ts     JobSimulator<D>: submit({id, account, queueSeconds, runSeconds, failureRate,
//               stuckRate, moderated, startTimeoutSeconds?, retentionSeconds (a number, or a
//               function of the drawn job), webhook?, data}) draws the job's whole future from a
//               seeded stream (time_scale applied); per-account
//               CONCURRENCY limit (`concurrency`, `concurrencyByAccount`, setLimit at runtime):
//               at most C running, the rest wait FIFO, never refused; cancel(job) (a queued job
//               never runs, a running one ends now); queuePosition, activeCount, runningCount,
//               countByPhase, peakRunning; onReschedule(jobs) when a cancel or limit change moves
//               ends; restore() replays the `state_file` journal (journal.ts), custom events too.
// - job.ts      Job: record (drawn, immutable), startsAt/endsAt/outcome, phaseAt(now) ->
//               queued | running | succeeded | failed | moderated | cancelled | timed_out | deleted
//               (deleted = ended + retention), resultFetchedAt for "deleted before fetched" audits.
// - webhooks.ts WebhookDispatcher: POST with a scaled timeout and retry schedule, duplicate and
//               lost faults (every attempt of a duplicate marked), headers computed per attempt by
//               the provider (its signature), outcomes counted; JobEndTimers: one timer per job with a webhook, re-armed on reschedules.
// - images/render.ts renderImage({prompt, index, width, height, format: png|jpeg, look: normal
//               | blank | black | corrupt}) and ImageCache (byte-bounded, concurrent asks render
//               once); images/ also holds the drawing it is made of (canvas, bitmap font, text
//               layout, palette from the prompt, PNG encoder), which apimart's images share.
// - downloads.ts sendBytes(req, res, bytes, contentType, {truncate, kbps}, clock): download faults.
// - stats.ts    CoreStats (requests by route pattern and status, webhooks by outcome, faults by
//               name); retentionShare: ready-to-first-fetch over retention, max and p99, for each
//               result a client got; ServerFaults: a seeded 5xx per request class, each its own rate.
// - config.ts   ConfigSpec + parseConfig / loadConfigFile / parseConfigText (every problem, as
//               `file:line:col path: message`), mergeOverDefaults, ConfigProblem, rate and
//               secondsRange schemas, deepFreeze; config-checks.ts duplicateAccountProblems
//               (unique account ids and keys) and validateChange (a PUT of limits, every problem).
// - http.ts     requestTarget, readJsonBody (size-capped, strict UTF-8; MAX_BODY_BYTES), sendJson,
//               sendJsonText, sendNdjson; admin-routes.ts ADMIN_PREFIX (/_emulator/) and
//               matchAdminRoute(method, path, routes): an admin route, or the methods it allows.
// - random-streams.ts randomStream(seed, index), seededUuid(random), uniform (random.ts: the
//               seeded sfc32 source itself).
// - clock.ts    Clock and systemClock. Time: pass a Clock; tests use a manual one, nothing here
//               sleeps.
export * from './server.js';
export * from './job.js';
export * from './jobs.js';
export * from './journal.js';
export * from './webhooks.js';
export * from './images/render.js';
export * from './downloads.js';
export * from './stats.js';
export * from './config.js';
export * from './config-checks.js';
export * from './http.js';
export * from './admin-routes.js';
export * from './random-streams.js';
export type { Clock, Timer } from './clock.js';
export { systemClock } from './clock.js';
