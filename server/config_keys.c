/*
 * config_keys.c — the table of every configuration key, and what it drives: --help and
 * the JSON dump of the effective configuration.
 *
 * One table, config_keys[], describes every key: its path, kind, default, limits, where
 * it lives in sextant_config and its help line; --help, the environment names, the JSON
 * dump and freeing are all driven by it, so a key exists in one place. A new key is one
 * row here and one field in server/config.h.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "server/base/mem.h"
#include "server/config_internal.h"

/* The web UI's default folder: the source tree's ui/dist (CMakeLists.txt sets it). */
#ifndef SEXTANT_UI_DIR
#define SEXTANT_UI_DIR "ui/dist"
#endif

const key_def config_keys[] = {
    {"database.url", K_DBURL, NULL, 0, 0, OFF(database.url), "required",
     "PostgreSQL connection string: a postgres:// URI or libpq key=value pairs."},
    {"database.pool_size", K_INT, "8", 1, 256, OFF(database.pool_size), NULL,
     "Connections the pool keeps open to PostgreSQL (1..256)."},
    {"database.connect_timeout", K_DURATION, "5s", 1, MS_HOUR, OFF(database.connect_timeout_ms),
     NULL,
     "Time allowed for connecting to one host; each host of a multi-host URL gets it in "
     "turn."},
    {"database.statement_timeout", K_DURATION, "30s", 0, MS_DAY, OFF(database.statement_timeout_ms),
     NULL, "Longest a statement may run; 0 for no limit."},
    {"database.prepared_statements", K_BOOL, "true", 0, 0, OFF(database.prepared_statements), NULL,
     "Prepare each statement once per connection and reuse it (PostgreSQL parses and plans it "
     "once); turn off when database.url goes through a pooler in transaction mode that does not "
     "track prepared statements (PgBouncer before 1.21, or without max_prepared_statements)."},
    {"database.listen_url", K_DBURL, "", 0, 0, OFF(database.listen_url), "database.url",
     "Connection string of the sessions that must stay whole (LISTEN/NOTIFY, the Kubernetes "
     "leader's lock), when database.url goes through a pooler in transaction mode (PgBouncer)."},
    {"database.reconnect_backoff_min", K_DURATION, "50ms", 1, MS_MINUTE,
     OFF(database.reconnect_backoff_min_ms), NULL,
     "First wait before reconnecting to an unreachable PostgreSQL; doubles on each failure."},
    {"database.reconnect_backoff_max", K_DURATION, "1s", 1, MS_MINUTE,
     OFF(database.reconnect_backoff_max_ms), NULL,
     "Longest wait between attempts to reconnect to PostgreSQL (at least the minimum)."},
    {"database.migrate_url", K_DBURL, "", 0, 0, OFF(database.migrate_url), "database.url",
     "Connection string of the schema owner, used by `sextant migrate` and `sextant audit "
     "archive`; serve connects with database.url, the runtime role's."},
    {"database.runtime_role", K_TEXT, "sextant_app", 0, 0, OFF(database.runtime_role), NULL,
     "Role `sextant migrate` grants what serve needs: audit rows it may insert and read but "
     "never change; created NOLOGIN when missing. Empty: grant nothing (one role for all)."},
    {"audit.reads", K_BOOL, "false", 0, 0, OFF(audit.reads), NULL,
     "Audit successful reads too (GET and HEAD on /api/v1: action <resource>.read, one row "
     "per request); writes and refusals are always audited."},
    {"redis.url", K_REDISURL, "", 0, 0, OFF(redis.url), "\"\", cache disabled",
     "Redis cache: redis://[[user]:password@]host[:port][/db]; empty disables the cache."},
    {"redis.timeout", K_DURATION, "500ms", 1, MS_MINUTE, OFF(redis.timeout_ms), NULL,
     "Time allowed for one Redis command before the cache is bypassed."},
    {"redis.key_prefix", K_PREFIX, "sextant:", 0, 0, OFF(redis.key_prefix), NULL,
     "Prefix of every Redis key, so that deployments can share a Redis."},
    {"redis.reconnect_backoff_min", K_DURATION, "50ms", 1, MS_MINUTE,
     OFF(redis.reconnect_backoff_min_ms), NULL,
     "First wait before reconnecting to an unreachable Redis; doubles on each failure."},
    {"redis.reconnect_backoff_max", K_DURATION, "1s", 1, MS_MINUTE,
     OFF(redis.reconnect_backoff_max_ms), NULL,
     "Longest wait between attempts to reconnect to Redis (at least the minimum)."},
    {"http.listen", K_LISTEN, "127.0.0.1:8080", 0, 0, OFF(http.listen), NULL,
     "REST API, UI, /healthz, /readyz and /metrics: host:port or [v6]:port."},
    {"http.threads", K_INT, "4", 1, 256, OFF(http.threads), NULL, "HTTP worker threads (1..256)."},
    {"http.max_body_bytes", K_INT, "1048576", 1, 1024LL * 1024 * 1024, OFF(http.max_body_bytes),
     NULL, "Largest request body accepted; larger ones get 413."},
    {"http.tls.cert_file", K_FILE, NULL, 0, 0, OFF(http.tls.cert_file), "none, plain HTTP",
     "PEM certificate chain for HTTPS; needs http.tls.key_file."},
    {"http.tls.key_file", K_FILE, NULL, 0, 0, OFF(http.tls.key_file), "none",
     "PEM private key for HTTPS; needs http.tls.cert_file."},
    {"http.ui_dir", K_TEXT, SEXTANT_UI_DIR, 0, 0, OFF(http.ui_dir), "<source tree>/ui/dist",
     "Folder of the built web UI (npm run build in ui/), served at /; \"\" serves no UI."},
    {"http.admin_listen", K_LISTEN, NULL, 0, 0, OFF(http.admin_listen), "none",
     "Admin listener (plain HTTP) serving only /healthz, /readyz, /readyz/xds and /metrics, "
     "with connection limits of its own, so probes stay answerable while the API port is "
     "flooded: host:port or [v6]:port; keep it on a private address."},
    {"http.max_connections", K_INT, "4096", 1, 1000000, OFF(http.max_connections), NULL,
     "Open connections the API port holds at once; more are accepted and closed at once, and "
     "counted (keep it below the process's open-files limit)."},
    {"http.max_connections_per_address", K_INT, "256", 1, 1000000,
     OFF(http.max_connections_per_address), NULL,
     "Open connections one client address may hold on the API port; more are closed at once. "
     "Behind a proxy every client has the proxy's address: raise it there."},
    {"http.header_timeout", K_DURATION, "10s", 100, MS_HOUR, OFF(http.header_timeout_ms), NULL,
     "Time a client has to send a request's headers, from the connection's start (or, on a "
     "kept-alive connection, from its request line); bytes trickling in do not extend it."},
    {"http.idle_timeout", K_DURATION, "60s", 1000, MS_HOUR, OFF(http.idle_timeout_ms), NULL,
     "A connection that sends and receives nothing for this long is closed (kept-alive "
     "connections between requests included); whole seconds."},
    {"grpc.listen", K_LISTEN, "127.0.0.1:18000", 0, 0, OFF(grpc.listen), NULL,
     "xDS gRPC server: host:port or [v6]:port."},
    {"grpc.tls.cert_file", K_FILE, NULL, 0, 0, OFF(grpc.tls.cert_file), "none, plaintext",
     "PEM certificate chain for gRPC TLS; needs grpc.tls.key_file."},
    {"grpc.tls.key_file", K_FILE, NULL, 0, 0, OFF(grpc.tls.key_file), "none",
     "PEM private key for gRPC TLS; needs grpc.tls.cert_file."},
    {"grpc.tls.client_ca_file", K_FILE, NULL, 0, 0, OFF(grpc.tls.client_ca_file), "none",
     "PEM CA bundle; when set, proxies must present a certificate it signed (mTLS)."},
    {"tls.reload_interval", K_DURATION, "5s", 100, MS_HOUR, OFF(tls.reload_interval_ms), NULL,
     "How often the certificate, key and client CA files are checked for changes; a change "
     "(or SIGHUP) reloads them without a restart."},
    {"tls.expiry_warning", K_DURATION, "336h", 0, 3650 * MS_DAY, OFF(tls.expiry_warning_ms), NULL,
     "From this long before a serving certificate expires, a warning is logged and /readyz "
     "shows a notice."},
    {"tls.managed", K_BOOL, "false", 0, 0, OFF(tls.managed), NULL,
     "Sextant issues the serving certificate of both listeners from tls.ca_cert_file and "
     "tls.ca_key_file, keeps it in PostgreSQL for every replica, and the leader renews it."},
    {"tls.ca_cert_file", K_FILE, NULL, 0, 0, OFF(tls.ca_cert_file), "none",
     "Managed mode: PEM certificate of the CA that issues the serving certificate."},
    {"tls.ca_key_file", K_FILE, NULL, 0, 0, OFF(tls.ca_key_file), "none",
     "Managed mode: PEM private key of that CA (unencrypted). Never logged."},
    {"tls.managed_names", K_TEXT, "localhost,127.0.0.1", 0, 0, OFF(tls.managed_names), NULL,
     "Managed mode: the serving certificate's subject alternative names, comma-separated DNS "
     "names and IP addresses."},
    {"tls.managed_lifetime", K_DURATION, "2160h", MS_HOUR, 3650 * MS_DAY,
     OFF(tls.managed_lifetime_ms), NULL,
     "Managed mode: validity of an issued serving certificate (default 90 days)."},
    {"tls.managed_renew_before", K_DURATION, "336h", MS_MINUTE, 3650 * MS_DAY,
     OFF(tls.managed_renew_before_ms), NULL,
     "Managed mode: the leader issues a new certificate this long before the current one "
     "expires (default 14 days); less than tls.managed_lifetime."},
    {"replica.id", K_REPLICA, NULL, 0, 0, OFF(replica.id), "<hostname>-<pid>",
     "This replica's name in logs, node status and leases."},
    {"log.level", K_LEVEL, "info", 0, 0, OFF(log.level), NULL,
     "Least severe level logged: debug, info, warn or error."},
    {"auth.enabled", K_BOOL, "true", 0, 0, OFF(auth.enabled), NULL,
     "Require a JWT bearer token on /api/v1; false serves the API to anyone (a warning is "
     "logged at start)."},
    {"auth.hs256_secret", K_SECRET, NULL, 0, 0, OFF(auth.hs256_secret), "none",
     "HS256 key that signs and verifies tokens, at least 32 bytes; prefer the _file form. "
     "Never logged."},
    {"auth.hs256_secret_file", K_FILE, NULL, 0, 0, OFF(auth.hs256_secret_file), "none",
     "File holding the HS256 key (one trailing newline is ignored)."},
    {"auth.rs256_public_key_file", K_FILE, NULL, 0, 0, OFF(auth.rs256_public_key_file), "none",
     "PEM RSA public key that verifies RS256 tokens."},
    {"auth.rs256_private_key_file", K_FILE, NULL, 0, 0, OFF(auth.rs256_private_key_file), "none",
     "PEM RSA private key with which `sextant token` signs RS256 tokens; must match "
     "auth.rs256_public_key_file when both are set."},
    {"auth.issuer", K_TEXT, NULL, 0, 0, OFF(auth.issuer), "none, not checked",
     "Required \"iss\" claim of every token; also written into minted tokens."},
    {"auth.audience", K_TEXT, NULL, 0, 0, OFF(auth.audience), "none, not checked",
     "Required \"aud\" claim (a string or one entry of an array); also written into minted "
     "tokens."},
    {"auth.clock_skew", K_DURATION, "60s", 0, MS_HOUR, OFF(auth.clock_skew_ms), NULL,
     "Leeway when checking a token's exp and nbf against this server's clock."},
    {"auth.max_token_lifetime", K_DURATION, "24h", 1000, 366 * MS_DAY,
     OFF(auth.max_token_lifetime_ms), NULL,
     "Longest lifetime of an accepted token (REST and xDS): exp - iat, or exp - now when it "
     "has no iat. `sextant token` mints no longer ones."},
    {"auth.policy_file", K_FILE, NULL, 0, 0, OFF(auth.policy_file), "none, built-in policy",
     "YAML RBAC policy mapping roles to resources and actions (see README, Authentication)."},
    {"auth.dev_sign_in", K_BOOL, "false", 0, 0, OFF(auth.dev_sign_in), NULL,
     "Local development only: allow signing in without a token."},
    {"secrets.key_file", K_FILE, NULL, 0, 0, OFF(secrets.key_file), "none",
     "Keyring that encrypts private keys in configs at rest (AES-256-GCM): lines \"<key id> "
     "<32 bytes as hex or base64> [active]\". Without it private keys are refused."},
    {"secrets.allow_plaintext", K_BOOL, "false", 0, 0, OFF(secrets.allow_plaintext), NULL,
     "Without secrets.key_file, store private keys unencrypted instead of refusing them "
     "(warned at start)."},
    {"shutdown.timeout", K_DURATION, "10s", 1, MS_HOUR, OFF(shutdown.timeout_ms), NULL,
     "Budget for stopping every component on SIGTERM; past it the process exits non-zero."},
    {"snapshots.load_timeout", K_DURATION, "30s", 1, MS_HOUR, OFF(snapshots.load_timeout_ms), NULL,
     "How long start-up may spend loading the latest snapshots."},
    {"snapshots.check_interval", K_DURATION, "10s", 100, MS_HOUR, OFF(snapshots.check_interval_ms),
     NULL,
     "How often each replica compares the latest snapshot version per group with what it "
     "serves, and loads what it lacks, reloads the rollout pins, and (while event streams are "
     "open) reads new events: what a lost NOTIFY would have brought."},
    {"xds.ack_timeout", K_DURATION, "0", 0, MS_HOUR, OFF(xds.ack_timeout_ms), "0, off",
     "An xDS response not ACKed or NACKed within this time ends its stream; 0 never."},
    {"xds.send_timeout", K_DURATION, "30s", 0, MS_HOUR, OFF(xds.send_timeout_ms), NULL,
     "An xDS response the proxy does not read within this time ends its stream; 0 never."},
    {"xds.default_group", K_PREFIX, "default", 0, 0, OFF(xds.default_group), NULL,
     "Proxy group of nodes whose node.cluster (or cluster) is empty."},
    {"xds.cq_threads", K_INT, "2", 1, 64, OFF(xds.cq_threads), NULL,
     "Threads serving the gRPC completion queue of the xDS server (1..64)."},
    {"api.idempotency_ttl", K_DURATION, "24h", MS_MINUTE, 30 * MS_DAY, OFF(api.idempotency_ttl_ms),
     NULL,
     "How long the answer of a mutating REST request sent with an Idempotency-Key is kept "
     "for a retry of the same request; older keys are deleted."},
    {"api.refusal_interval", K_DURATION, "60s", 1000, MS_HOUR, OFF(api.refusal_interval_ms), NULL,
     "REST requests refused for their token (401) or by a rate limit (429) are audited as one "
     "row per client address (and user, once known), status and interval, with their count; "
     "the first of each is logged."},
    {"xds.max_connection_age", K_DURATION, "30m", 0, MS_DAY, OFF(xds.max_connection_age_ms), NULL,
     "A gRPC connection older than this (+-10% jitter) gets GOAWAY, so its proxy reconnects "
     "and streams spread over the replicas again; 0 never."},
    {"xds.max_connection_age_grace", K_DURATION, "5m", 0, MS_DAY,
     OFF(xds.max_connection_age_grace_ms), NULL,
     "After the GOAWAY of xds.max_connection_age, streams still open on the connection are "
     "closed after this long."},
    {"xds.max_receive_message_bytes", K_INT, "4194304", 1024, 64LL * 1024 * 1024,
     OFF(xds.max_receive_message_bytes), NULL,
     "Largest xDS request message accepted; a larger one ends its stream with "
     "RESOURCE_EXHAUSTED (gRPC's own check, before Sextant decodes it)."},
    {"xds.max_streams", K_INT, "100000", 0, 10000000, OFF(xds.max_streams), "0, no bound",
     "Active xDS streams one replica serves; a new node's stream beyond it is refused with "
     "RESOURCE_EXHAUSTED (a stream superseding one of the same node is not new)."},
    {"xds.max_resource_names", K_INT, "10000", 1, 1000000, OFF(xds.max_resource_names), NULL,
     "Resource names one xDS request may carry (SotW names, Delta subscribe plus unsubscribe); "
     "more ends the stream with RESOURCE_EXHAUSTED."},
    {"xds.max_resource_name_length", K_INT, "1024", 1, 65536, OFF(xds.max_resource_name_length),
     NULL,
     "Longest resource name in an xDS request, in bytes; longer ends the stream with "
     "INVALID_ARGUMENT."},
    {"xds.max_node_metadata_bytes", K_INT, "65536", 0, 16LL * 1024 * 1024,
     OFF(xds.max_node_metadata_bytes), NULL,
     "Largest node metadata (protobuf-encoded) a stream's first request may carry; larger "
     "refuses the stream with INVALID_ARGUMENT."},
    {"xds.min_client_ping_interval", K_DURATION, "10s", 0, MS_HOUR,
     OFF(xds.min_client_ping_interval_ms), NULL,
     "HTTP/2 pings a client sends closer together than this (without data) are strikes."},
    {"xds.max_ping_strikes", K_INT, "2", 0, 100, OFF(xds.max_ping_strikes), "0, never",
     "Strikes after which a connection gets GOAWAY (ENHANCE_YOUR_CALM); 0 tolerates any."},
    {"xds.auth", K_TEXT, NULL, 0, 0, OFF(xds.auth), "required by serve",
     "How xDS clients are authenticated: mtls (client certificate SAN), jwt (bearer token), "
     "\"mtls,jwt\" (either), or none (any client may claim any node id; development only)."},
    {"xds.mtls.node_id_from", K_TEXT, NULL, 0, 0, OFF(xds.mtls_node_id_from), "none",
     "With xds.auth mtls: comma-separated patterns of the client certificate's URI or DNS SAN, "
     "each holding {node} once (the node id) and * for any run of characters but '/', e.g. "
     "spiffe://example.org/ns/*/node/{node}."},
    {"xds.auth_failure_interval", K_DURATION, "60s", 1000, MS_HOUR,
     OFF(xds.auth_failure_interval_ms), NULL,
     "xDS clients refused for their credentials are logged once per client address in each "
     "such interval, and audited as one row per address and interval with their count."},
    {"ratelimit.read_rate", K_INT, "50", 1, 1000000, OFF(ratelimit.read_rate), NULL,
     "Sustained API reads per second per user (token bucket refill)."},
    {"ratelimit.read_burst", K_INT, "100", 1, 1000000, OFF(ratelimit.read_burst), NULL,
     "API reads a user may make at once (token bucket size)."},
    {"ratelimit.write_rate", K_INT, "5", 1, 1000000, OFF(ratelimit.write_rate), NULL,
     "Sustained API writes per second per user."},
    {"ratelimit.write_burst", K_INT, "20", 1, 1000000, OFF(ratelimit.write_burst), NULL,
     "API writes a user may make at once."},
    {"ratelimit.auth_fail_rate", K_INT, "1", 1, 1000000, OFF(ratelimit.auth_fail_rate), NULL,
     "Sustained failed authentications per second per client address; past them, 429."},
    {"ratelimit.auth_fail_burst", K_INT, "20", 1, 1000000, OFF(ratelimit.auth_fail_burst), NULL,
     "Failed authentications a client address may make at once; each one past the bucket "
     "is counted into the next audit row instead of writing its own (writes refused for "
     "their size spend the same bucket to be audited)."},
    {"ratelimit.redis_timeout", K_DURATION, "100ms", 1, MS_MINUTE, OFF(ratelimit.redis_timeout_ms),
     NULL,
     "Longest an API request waits for its rate-limit bucket in Redis (redis.url, shared by "
     "every replica) before this replica decides alone with buckets of its own."},
    {"limits.config.max_listeners", K_INT, "100", 1, 1000000, OFF(limits.config.max_listeners),
     NULL, "Listeners one config may hold."},
    {"limits.config.max_routes", K_INT, "1000", 1, 1000000, OFF(limits.config.max_routes), NULL,
     "Routes (HTTP, gRPC and stream) one config may hold."},
    {"limits.config.max_backends", K_INT, "1000", 1, 1000000, OFF(limits.config.max_backends), NULL,
     "Backends one config may hold."},
    {"limits.config.max_endpoints", K_INT, "10000", 1, 10000000, OFF(limits.config.max_endpoints),
     NULL, "Endpoints, over all backends, one config may hold."},
    {"limits.group.max_listeners", K_INT, "1000", 1, 1000000, OFF(limits.group.max_listeners), NULL,
     "Listeners of all configs of one proxy group together."},
    {"limits.group.max_routes", K_INT, "10000", 1, 10000000, OFF(limits.group.max_routes), NULL,
     "Routes of all configs of one proxy group together."},
    {"limits.group.max_backends", K_INT, "10000", 1, 10000000, OFF(limits.group.max_backends), NULL,
     "Backends of all configs of one proxy group together."},
    {"limits.group.max_endpoints", K_INT, "100000", 1, 100000000, OFF(limits.group.max_endpoints),
     NULL, "Endpoints of all configs of one proxy group together."},
    {"validation.tls_on_privileged_ports", K_BOOL, "false", 0, 0,
     OFF(validation.tls_on_privileged_ports), NULL,
     "Refuse HTTP listeners without TLS on ports below 1024 (except 80)."},
    {"validation.refuse_private_endpoints", K_BOOL, "false", 0, 0,
     OFF(validation.refuse_private_endpoints), NULL,
     "Refuse backend endpoints with private, loopback or link-local addresses."},
    {"validation.regex_max_program_size", K_INT, "100", 1, 100000,
     OFF(validation.regex_max_program_size), NULL,
     "Largest RE2 program size of a route's regular expression (1..100000); larger ones are "
     "refused. Match the proxies' re2.max_program_size.error_level (Envoy's default: 100)."},
    {"groups.default_data_planes", K_TEXT, "envoy,grpc,control", 0, 0,
     OFF(groups.default_data_planes), NULL,
     "Data planes a proxy group serves until it names its own (comma-separated envoy, grpc, "
     "control): validation refuses what one of them cannot take."},
    {"nodes.flush_interval", K_DURATION, "1s", 10, MS_HOUR, OFF(nodes.flush_interval_ms), NULL,
     "Debounce window for writing node status (ACKs, last seen); NACKs and connects are "
     "written at once."},
    {"fleet.stale_after", K_DURATION, "120s", 1000, 24 * MS_HOUR, OFF(fleet.stale_after_ms), NULL,
     "A connected node with no stream activity for this long is stale."},
    {"fleet.disconnected_after", K_DURATION, "300s", 1000, 24 * MS_HOUR,
     OFF(fleet.disconnected_after_ms), NULL,
     "A node with no activity for this long counts as disconnected even if its stream is "
     "still marked up; must be greater than fleet.stale_after."},
    {"rollouts.tick", K_DURATION, "1s", 10, MS_HOUR, OFF(rollouts.tick_ms), NULL,
     "How often each replica looks at the deployments it drives."},
    {"rollouts.lease", K_DURATION, "10s", 100, MS_HOUR, OFF(rollouts.lease_ms), NULL,
     "How long a replica holds a deployment without renewing; another replica takes it over "
     "after that."},
    {"rollouts.nack_threshold_percent", K_INT, "5", 0, 100, OFF(rollouts.nack_threshold_percent),
     NULL, "Default NACK rate (percent of responses) above which a rollout halts and rolls back."},
    {"rollouts.nack_min_sample", K_INT, "10", 0, 1000000, OFF(rollouts.nack_min_sample), NULL,
     "Default number of responses before the NACK rate is judged."},
    {"rollouts.wave_timeout", K_DURATION, "10m", 1000, 24 * MS_HOUR, OFF(rollouts.wave_timeout_ms),
     NULL, "Default time a wave may take to be ACKed before the rollout fails."},
    {"rollouts.health_failures", K_INT, "3", 1, 1000000, OFF(rollouts.health_failures), NULL,
     "Default number of wave nodes reporting not ready that halts a rollout."},
    {"nodes.max_pending", K_INT, "10000", 1, 10000000, OFF(nodes.max_pending), NULL,
     "Bound on nodes with unwritten status updates; routine updates beyond it are dropped "
     "and counted."},
    {"events.retention", K_DURATION, "24h", MS_MINUTE, 30 * MS_DAY, OFF(events.retention_ms), NULL,
     "How long live events (GET /api/v1/events) are kept for clients resuming with "
     "Last-Event-ID."},
    {"events.keepalive", K_DURATION, "15s", 100, MS_MINUTE, OFF(events.keepalive_ms), NULL,
     "Interval of the keep-alive comment on an idle event stream."},
    {"events.max_streams", K_INT, "1000", 1, 100000, OFF(events.max_streams), NULL,
     "Event streams one replica serves at once; more get 503."},
    {"events.max_streams_per_user", K_INT, "8", 1, 100000, OFF(events.max_streams_per_user), NULL,
     "Event streams one user (token subject) holds at once on a replica; more get 429."},
    {"events.max_stream_lifetime", K_DURATION, "30m", 1000, MS_DAY,
     OFF(events.max_stream_lifetime_ms), NULL,
     "An event stream ends after this long, plus a random part of up to as long again, so "
     "clients reconnect (with Last-Event-ID) and spread over the replicas; a stream also ends "
     "when its token expires."},
    {"leader.retry", K_DURATION, "2s", 10, MS_HOUR, OFF(leader.retry_ms), NULL,
     "How often a replica that does not lead tries to take the leader lock."},
    {"leader.lease", K_DURATION, "10s", 1000, MS_HOUR, OFF(leader.lease_ms), NULL,
     "PostgreSQL ends the lock session of a leader it has not heard from for this long, so "
     "another replica leads at most about leader.retry + leader.lease after a leader is cut "
     "off."},
    {"leader.check", K_DURATION, "1s", 10, 30 * MS_MINUTE, OFF(leader.check_ms), NULL,
     "How often the leader checks its lock session (it stops leading when a check fails); at "
     "most half of leader.lease."},
    {"leader.heartbeat", K_DURATION, "5s", 100, MS_HOUR, OFF(leader.heartbeat_ms), NULL,
     "How often each replica refreshes its row of GET /api/v1/replicas; a replica silent for "
     "three heartbeats is shown as not alive."},
    {"leader.forget_after", K_DURATION, "24h", MS_MINUTE, 30 * MS_DAY, OFF(leader.forget_after_ms),
     NULL, "The leader deletes the rows of replicas silent for this long."},
    {"alerts.enabled", K_BOOL, "true", 0, 0, OFF(alerts.enabled), NULL,
     "Evaluate Sextant's own alert rules on the leader (GET /api/v1/alerts, alerts.webhooks)."},
    {"alerts.interval", K_DURATION, "15s", 100, MS_HOUR, OFF(alerts.interval_ms), NULL,
     "How often the leader evaluates the alert rules."},
    {"alerts.nack_rate_percent", K_INT, "5", 0, 100, OFF(alerts.nack_rate_percent), NULL,
     "Rule nack_rate: a group's NACKs, as a percentage of its ACKs and NACKs over "
     "alerts.nack_window, above this fire an alert."},
    {"alerts.nack_window", K_DURATION, "5m", 1000, 24 * MS_HOUR, OFF(alerts.nack_window_ms), NULL,
     "Rule nack_rate: the window the NACK rate is measured over."},
    {"alerts.nack_min_responses", K_INT, "10", 1, 1000000, OFF(alerts.nack_min_responses), NULL,
     "Rule nack_rate: a group's rate is judged once the window holds this many ACKs and "
     "NACKs."},
    {"alerts.disconnected_after", K_DURATION, "2m", 0, 24 * MS_HOUR,
     OFF(alerts.disconnected_after_ms), NULL,
     "Rule proxy_disconnected: a proxy disconnected for longer than this fires an alert; it "
     "resolves when the proxy reconnects."},
    {"alerts.disconnected_forget", K_DURATION, "1h", 1000, 30 * MS_DAY,
     OFF(alerts.disconnected_forget_ms), NULL,
     "Rule proxy_disconnected: a proxy disconnected for longer than this is taken as gone for "
     "good and its alert resolves; greater than alerts.disconnected_after."},
    {"alerts.deployment_window", K_DURATION, "1h", 1000, 30 * MS_DAY,
     OFF(alerts.deployment_window_ms), NULL,
     "Rule deployment_failed: a deployment that ended failed, rolled_back or rollback_failed "
     "fires an alert that resolves this long after it ended."},
    {"alerts.replica_lost_after", K_DURATION, "0", 0, MS_DAY, OFF(alerts.replica_lost_after_ms),
     "0, three leader.heartbeat",
     "Rule replica_lost: a replica whose heartbeat is older than this, and that did not stop "
     "cleanly, fires an alert; it resolves when the replica beats again or is forgotten "
     "(leader.forget_after)."},
    {"alerts.webhooks", K_WEBHOOKS, "", 0, 0, OFF(alerts.webhooks), "none",
     "Webhooks every alert is POSTed to when it fires and resolves: a list of {url, secret} "
     "(in the environment, a JSON array); the body is signed with the secret "
     "(X-Sextant-Signature)."},
    {"alerts.webhook_timeout", K_DURATION, "5s", 100, MS_MINUTE, OFF(alerts.webhook_timeout_ms),
     NULL, "Time allowed for one webhook POST."},
    {"alerts.webhook_retries", K_INT, "5", 0, 100, OFF(alerts.webhook_retries), NULL,
     "A webhook POST that fails (no answer, or not 2xx) is retried this many times."},
    {"alerts.webhook_backoff_min", K_DURATION, "1s", 10, MS_HOUR,
     OFF(alerts.webhook_backoff_min_ms), NULL,
     "Wait before the first retry of a webhook POST; it doubles with each retry."},
    {"alerts.webhook_backoff_max", K_DURATION, "1m", 10, MS_HOUR,
     OFF(alerts.webhook_backoff_max_ms), NULL,
     "Longest wait between two retries of a webhook POST."},
    {"k8s.enabled", K_BOOL, "false", 0, 0, OFF(k8s.enabled), NULL,
     "Watch the Kubernetes Gateway API and write one config (source kubernetes) per Gateway "
     "of a GatewayClass of ours."},
    {"k8s.kubeconfig", K_FILE, NULL, 0, 0, OFF(k8s.kubeconfig), "none, in-cluster",
     "kubeconfig file whose current context names the API server and credentials; none: the "
     "pod's service account (KUBERNETES_SERVICE_HOST/PORT)."},
    {"k8s.controller_name", K_TEXT, "sextant.dev/gateway-controller", 0, 0,
     OFF(k8s.controller_name), NULL,
     "A GatewayClass whose spec.controllerName is this is served by Sextant."},
    {"k8s.group_template", K_TEXT, "<namespace>/<gateway>", 0, 0, OFF(k8s.group_template), NULL,
     "Proxy group of a Gateway: <namespace> and <gateway> stand for its namespace and name; "
     "must contain <gateway>."},
    {"k8s.gateway_addresses", K_ADDRESSES, "", 0, 0, OFF(k8s.gateway_addresses),
     "none, no status.addresses",
     "IP addresses and host names, comma-separated (or a YAML list), written to every "
     "Gateway's status.addresses."},
    {"k8s.settle_delay", K_DURATION, "100ms", 0, MS_MINUTE, OFF(k8s.settle_delay_ms), NULL,
     "A translation starts this long after the last change of a burst of watch events."},
    {"k8s.settle_max", K_DURATION, "1s", 1, 10 * MS_MINUTE, OFF(k8s.settle_max_ms), NULL,
     "A translation starts at the latest this long after the first change of a burst, even "
     "while changes keep coming; not less than k8s.settle_delay."},
    {"k8s.max_input_objects", K_INT, "0", 0, 1000000000, OFF(k8s.max_input_objects), "0, no limit",
     "Kubernetes objects one translation may read; past it the build fails and the last good "
     "snapshots keep serving."},
    {"k8s.max_objects_per_snapshot", K_INT, "0", 0, 1000000000, OFF(k8s.max_objects_per_snapshot),
     "0, no limit",
     "Listeners, routes, backends and secrets one Gateway's translation may produce; past it "
     "that Gateway's build fails."},
    {"k8s.max_endpoints_per_snapshot", K_INT, "0", 0, 1000000000,
     OFF(k8s.max_endpoints_per_snapshot), "0, no limit",
     "Backend endpoints one Gateway's translation may produce; past it that Gateway's build "
     "fails."},
    {"k8s.resync", K_DURATION, "10h", 0, 24 * MS_HOUR, OFF(k8s.resync_ms), NULL,
     "Every watched object is reconciled again this often without an event (its config and "
     "status checked against the database and the API server, written where they differ); "
     "0 never."},
    {"k8s.max_backoff", K_DURATION, "5m", 1000, 24 * MS_HOUR, OFF(k8s.max_backoff_ms), NULL,
     "A failed reconcile of an object is tried again after 1s, doubling up to this; a success "
     "resets it."},
    {"k8s.watch_timeout", K_DURATION, "5m", 1000, MS_HOUR, OFF(k8s.watch_timeout_ms), NULL,
     "timeoutSeconds of each watch request (whole seconds); the watch then resumes from its "
     "last resourceVersion."},
};

const size_t config_nkeys = sizeof(config_keys) / sizeof(config_keys[0]);

/* ------------------------------------------------------------------ small helpers */

void *config_key_field(sextant_config *cfg, size_t i)
{
    return (char *)cfg + config_keys[i].off;
}

const void *config_key_cfield(const sextant_config *cfg, size_t i)
{
    return (const char *)cfg + config_keys[i].off;
}

void config_env_name(const char *path, char *out, size_t n)
{
    size_t j = (size_t)snprintf(out, n, "SEXTANT_");
    for (const char *p = path; *p && j + 1 < n; p++)
        out[j++] = *p == '.' ? '_' : (char)toupper((unsigned char)*p);
    out[j] = '\0';
}

int config_key_find(const char *path)
{
    for (size_t i = 0; i < config_nkeys; i++)
        if (strcmp(config_keys[i].path, path) == 0)
            return (int)i;
    return -1;
}

/* True when path is a proper prefix section of some key ("http", "http.tls"). */
bool config_key_is_section(const char *path)
{
    size_t n = strlen(path);
    for (size_t i = 0; i < config_nkeys; i++)
        if (strncmp(config_keys[i].path, path, n) == 0 && config_keys[i].path[n] == '.')
            return true;
    return false;
}

/* Writes s quoted for a message: escapes quotes and control bytes, cut at 80 bytes. */
const char *config_quote(const char *s, char *out, size_t n)
{
    size_t j = 0, shown = 0;
    if (n < 8)
        return "";
    out[j++] = '"';
    for (; *s && j + 6 < n; s++, shown++) {
        if (shown == 80) {
            j += (size_t)snprintf(out + j, n - j, "...");
            break;
        }
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[j++] = '\\';
            out[j++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            j += (size_t)snprintf(out + j, n - j, "\\x%02x", c);
        } else {
            out[j++] = (char)c;
        }
    }
    out[j++] = '"';
    out[j] = '\0';
    return out;
}

size_t config_levenshtein(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] == b[j - 1] ? 0 : 1);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The sibling of an unknown key name under prefix that is closest in spelling, or NULL. */
const char *config_suggest_key(const char *prefix, const char *name, char *out, size_t n)
{
    size_t plen = strlen(prefix), best = 3;
    const char *found = NULL;
    for (size_t i = 0; i < config_nkeys; i++) {
        const char *p = config_keys[i].path;
        if (plen) {
            if (strncmp(p, prefix, plen) != 0 || p[plen] != '.')
                continue;
            p += plen + 1;
        }
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        char seg[64];
        snprintf(seg, sizeof(seg), "%.*s", (int)len, p);
        size_t d = config_levenshtein(seg, name);
        if (d < best && d < strlen(seg)) {
            best = d;
            snprintf(out, n, "%s", seg);
            found = out;
        }
    }
    return found;
}

/* ------------------------------------------------------------------ dump and help */

/* The object that holds the last segment of path, creating parents as needed. */
static json_t *parent_object(json_t *root, const char *path, const char **leaf)
{
    json_t *o = root;
    const char *p = path;
    const char *dot;
    while ((dot = strchr(p, '.')) != NULL) {
        char seg[64];
        snprintf(seg, sizeof(seg), "%.*s", (int)(dot - p), p);
        json_t *child = json_object_get(o, seg);
        if (child == NULL) {
            child = json_object();
            json_object_set_new(o, seg, child);
        }
        o = child;
        p = dot + 1;
    }
    *leaf = p;
    return o;
}

json_t *config_dump_json(const sextant_config *cfg)
{
    static const char *level_names[] = {"debug", "info", "warn", "error"};
    json_t *root = json_object();
    for (size_t i = 0; i < config_nkeys; i++) {
        const char *leaf;
        json_t *o = parent_object(root, config_keys[i].path, &leaf);
        const void *f = config_key_cfield(cfg, i);
        json_t *v = NULL;
        char buf[1024];
        switch (config_keys[i].kind) {
        case K_DBURL:
        case K_REDISURL: {
            const char *s = *(char *const *)f;
            v = s ? json_string(sx_redact_url(s, buf, sizeof(buf))) : json_null();
            break;
        }
        case K_INT:
            v = json_integer(*(const int64_t *)f);
            break;
        case K_DURATION:
            v = json_string(config_format_duration(*(const int64_t *)f, buf, sizeof(buf)));
            break;
        case K_BOOL:
            v = json_boolean(*(const bool *)f);
            break;
        case K_LISTEN: {
            const config_listen *l = f;
            v = l->text ? json_string(l->text) : json_null();
            break;
        }
        case K_LEVEL: {
            int lv = (int)*(const sx_log_level *)f;
            v = json_string(lv >= 0 && lv < 4 ? level_names[lv] : "info");
            break;
        }
        case K_SECRET:
            v = *(char *const *)f ? json_string("***") : json_null();
            break;
        case K_FILE:
        case K_TEXT:
        case K_PREFIX:
        case K_REPLICA: {
            const char *s = *(char *const *)f;
            v = s ? json_string(s) : json_null();
            break;
        }
        case K_ADDRESSES: {
            const config_addresses *l = f;
            v = json_array();
            for (size_t k = 0; k < l->count; k++)
                json_array_append_new(v, json_string(l->items[k].value));
            break;
        }
        case K_WEBHOOKS: {
            const config_webhooks *l = f;
            v = json_array();
            for (size_t k = 0; k < l->count; k++) {
                char u[512];
                json_array_append_new(
                    v, json_pack("{s:s,s:s}", "url",
                                 config_webhook_origin(l->items[k].url, u, sizeof(u)), "secret",
                                 "***"));
            }
            break;
        }
        }
        json_object_set_new(o, leaf, v ? v : json_null());
    }
    return root;
}

void config_write_help(sx_buf *out)
{
    sx_buf_puts(out, "Configuration keys (YAML path, environment variable, default). The\n"
                     "environment overrides the file; an empty value unsets optional keys.\n"
                     "Durations: 500ms, 5s, 1m, 1h, 1m30s.\n\n");
    for (size_t i = 0; i < config_nkeys; i++) {
        char env[64];
        config_env_name(config_keys[i].path, env, sizeof(env));
        const char *def =
            config_keys[i].help_default ? config_keys[i].help_default : config_keys[i].def;
        sx_buf_printf(out, "  %s  (%s; %s%s)\n      %s\n", config_keys[i].path, env,
                      config_keys[i].help_default ? "" : "default ", def ? def : "none",
                      config_keys[i].help);
    }
}
