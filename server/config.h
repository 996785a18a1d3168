/*
 * config.h — the daemon's configuration: a YAML file overridden by SEXTANT_* variables.
 *
 * Every key has exactly one environment variable: the key path upper-cased with dots
 * turned into underscores and "SEXTANT_" in front (database.pool_size is
 * SEXTANT_DATABASE_POOL_SIZE). Precedence: environment > file > default. The file is
 * optional when the environment supplies every required key (only database.url is
 * required). A YAML null (`key:` with nothing after it, or `~`) counts as "not set".
 *
 * Keys (the table in config_keys.c is the single source of the --help text; keep both
 * in step):
 *
 *   key                            type      default            notes
 *   -----------------------------  --------  -----------------  -------------------------------
 *   database.url                   string    (required)         libpq URI or key=value string
 *   database.pool_size             integer   8                  1..256
 *   database.connect_timeout       duration  5s                 1ms..1h
 *   database.statement_timeout     duration  30s                0 (no limit)..24h
 *   database.prepared_statements   bool      true               off behind transaction poolers
 *   database.listen_url            string    database.url       LISTEN/NOTIFY connection string
 *   database.reconnect_backoff_min duration  50ms               1ms..1m; doubles per failure
 *   database.reconnect_backoff_max duration  1s                 1ms..1m; >= the minimum
 *   database.migrate_url           string    database.url       the schema owner's connection
 *   database.runtime_role          string    sextant_app        role migrate grants serve's rights
 *   redis.url                      string    ""                 "" disables the cache;
 *                                                               redis://[[user]:pass@]host[:port][/db]
 *   redis.timeout                  duration  500ms              1ms..1m
 *   redis.key_prefix               string    sextant:           at most 64 bytes, no spaces
 *   redis.reconnect_backoff_min    duration  50ms               1ms..1m; doubles per failure
 *   redis.reconnect_backoff_max    duration  1s                 1ms..1m; >= the minimum
 *   http.listen                    address   127.0.0.1:8080     host:port or [v6]:port
 *   http.threads                   integer   4                  1..256
 *   http.max_body_bytes            integer   1048576            1..1073741824
 *   http.tls.cert_file             file      (none)             PEM; together with key_file
 *   http.tls.key_file              file      (none)             PEM; together with cert_file
 *   http.ui_dir                    string    <source>/ui/dist   the built web UI; "" serves none
 *   http.admin_listen              address   (none)             /healthz, /readyz, /metrics only
 *   http.max_connections           integer   4096               1..1000000 open on the API port
 *   http.max_connections_per_address integer 256                1..1000000 per client address
 *   http.header_timeout            duration  10s                100ms..1h to send the headers
 *   http.idle_timeout              duration  60s                1s..1h without traffic
 *   grpc.listen                    address   127.0.0.1:18000    host:port or [v6]:port
 *   grpc.tls.cert_file             file      (none)             PEM; together with key_file
 *   grpc.tls.key_file              file      (none)             PEM; together with cert_file
 *   grpc.tls.client_ca_file        file      (none)             PEM; turns on mTLS (needs cert/key)
 *   api.idempotency_ttl            duration  24h                1m..30d; older keys are deleted
 *   api.refusal_interval           duration  60s                1s..1h; 401s and 429s audited per
 *                                                                source, status and interval
 *   replica.id                     string    <hostname>-<pid>   1..128 of [A-Za-z0-9._:-]
 *   log.level                      enum      info               debug, info, warn, error
 *   auth.enabled                   boolean   true               false: no token needed (warned)
 *   auth.hs256_secret              secret    (none)             at least 32 bytes; never logged
 *   auth.hs256_secret_file         file      (none)             file holding the secret instead
 *   auth.rs256_public_key_file     file      (none)             PEM RSA public key (verifies)
 *   auth.rs256_private_key_file    file      (none)             PEM RSA private key (mints)
 *   auth.issuer                    string    (none)             required "iss" when set
 *   auth.audience                  string    (none)             required "aud" when set
 *   auth.clock_skew                duration  60s                0..1h leeway on exp and nbf
 *   auth.max_token_lifetime        duration  24h                1s..366d; exp - iat at most
 *   auth.policy_file               file      (none)             YAML RBAC policy; none: built-in
 *   auth.dev_sign_in               boolean   false              true/false, yes/no, on/off, 1/0
 *   secrets.key_file               file      (none)             keyring sealing private keys at
 *                                                               rest; none: they are refused
 *   secrets.allow_plaintext        boolean   false              no key_file: store them unsealed
 *   shutdown.timeout               duration  10s                1ms..1h
 *   snapshots.load_timeout         duration  30s                1ms..1h
 *   snapshots.check_interval       duration  10s                100ms..1h; latest versions
 *                                                               compared with what is served
 *   xds.ack_timeout                duration  0                  0 (off)..1h; unanswered response
 *                                                               ends the stream (ack_timeout)
 *   xds.send_timeout               duration  30s                0 (off)..1h; unwritten response
 *                                                               ends the stream (send_timeout)
 *   xds.default_group              string    default            group of nodes naming no cluster
 *   xds.cq_threads                 integer   2                  1..64 gRPC completion queue threads
 *   xds.max_connection_age         duration  30m                0 (off)..24h; then GOAWAY
 *   xds.max_connection_age_grace   duration  5m                 0..24h; then streams closed
 *   xds.max_receive_message_bytes  integer   4194304            1024..64 MiB per request message
 *   xds.max_streams                integer   100000             0 (off)..10000000 per replica
 *   xds.max_resource_names         integer   10000              1..1000000 names per request
 *   xds.max_resource_name_length   integer   1024               1..65536 bytes per name
 *   xds.max_node_metadata_bytes    integer   65536              0..16 MiB node metadata, encoded
 *   xds.min_client_ping_interval   duration  10s                0..1h between a client's pings
 *   xds.max_ping_strikes           integer   2                  0 (off)..100 early pings, then
 *                                                               GOAWAY
 *   xds.auth                       string    (required: serve)  none, mtls, jwt or "mtls,jwt"
 *   xds.mtls.node_id_from          string    none               SAN patterns holding {node}
 *   xds.auth_failure_interval      duration  60s                1s..1h; refusals logged and
 *                                                               audited once per source each
 *                                                               interval
 *   fleet.stale_after              duration  120s               1s..24h; idle connected node is
 * stale fleet.disconnected_after       duration  300s               1s..24h; > stale_after; idle
 * node counts as disconnected
 *   rollouts.tick                  duration  1s                 10ms..1h driver period
 *   rollouts.lease                 duration  10s                100ms..1h; take-over after it
 *   rollouts.nack_threshold_percent integer  5                  0..100 default NACK rate limit
 *   rollouts.nack_min_sample       integer   10                 0.. responses before it counts
 *   rollouts.wave_timeout          duration  10m                1s..24h default wave timeout
 *   rollouts.health_failures       integer   3                  1.. not-ready reports that halt
 *   events.retention               duration  24h                1m..30d; older events are pruned
 *   events.keepalive               duration  15s                100ms..1m; idle stream comment
 *   events.max_streams             integer   1000               1..100000 streams per replica
 *   events.max_streams_per_user    integer   8                  1..100000 streams per user
 *   events.max_stream_lifetime     duration  30m                1s..24h, plus up to as long again
 *   leader.retry                   duration  2s                 10ms..1h between tries for the lock
 *   leader.lease                   duration  10s                1s..1h; a silent holder's session
 *                                                               ends after it (take-over bound)
 *   leader.check                   duration  1s                 10ms..30m; at most leader.lease / 2
 *   leader.heartbeat               duration  5s                 100ms..1h replicas row refresh
 *   leader.forget_after            duration  24h                1m..30d; older replica rows go
 *   k8s.enabled                    boolean   false              watch the Gateway API, write
 *                                                               its configs (source kubernetes)
 *   k8s.kubeconfig                 file      (none)             kubeconfig; none: in-cluster
 *   k8s.controller_name            string    sextant.dev/gateway-controller
 *                                                               GatewayClass controllerName
 *   k8s.group_template             string    <namespace>/<gateway>  a Gateway's proxy group
 *   k8s.gateway_addresses          list      (none)             IPs/hostnames for Gateway
 *                                                               status; none: the Service's
 *   k8s.settle_delay               duration  100ms              0..1m quiet time before a build
 *   k8s.settle_max                 duration  1s                 1ms..10m; >= settle_delay
 *   k8s.max_input_objects          integer   0                  0 (no limit)..1000000000
 *   k8s.max_objects_per_snapshot   integer   0                  0 (no limit)..1000000000
 *   k8s.max_endpoints_per_snapshot integer   0                  0 (no limit)..1000000000
 *   k8s.resync                     duration  10h                0 (never) or 1s..24h; re-reconcile
 *   k8s.max_backoff                duration  5m                 1s..24h; longest requeue delay
 *   k8s.watch_timeout              duration  5m                 1s..1h whole seconds, per watch
 *
 * Durations are one or more <integer><unit> groups with unit ms, s, m or h ("500ms",
 * "5s", "1m30s"), or "0". Files are checked to exist and be readable at load time.
 * Lists are a YAML sequence of values, or one text of comma-separated values (the only
 * form an environment variable has).
 */
#ifndef SX_SERVER_CONFIG_H
#define SX_SERVER_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "server/base/buf.h"
#include "server/base/err.h"
#include "server/base/fielderr.h"
#include "server/base/log.h"

/* A parsed listen address. */
typedef struct config_listen {
    char *text; /* as configured: "127.0.0.1:8080", "[::1]:8080" */
    char *host; /* "127.0.0.1", "::1" (no brackets), "localhost" */
    int port;   /* 1..65535 */
} config_listen;

/* TLS material; all NULL when TLS is off. */
typedef struct config_tls {
    char *cert_file;      /* PEM certificate chain */
    char *key_file;       /* PEM private key */
    char *client_ca_file; /* grpc only: PEM CA bundle; set means clients must present a cert */
} config_tls;

/* An address a Gateway's status reports (status.addresses[]). */
typedef struct config_address {
    char *value; /* "203.0.113.7", "2001:db8::1", "gateway.example.com" */
    bool is_ip;  /* true: type IPAddress; false: type Hostname */
} config_address;

/* A list of addresses; items NULL when count is 0. */
typedef struct config_addresses {
    config_address *items;
    size_t count;
} config_addresses;

/* A webhook alerts are POSTed to (alerts.webhooks). */
typedef struct config_webhook {
    char *url;    /* http:// or https://; may carry credentials: log only through sx_redact_url */
    char *secret; /* the HMAC-SHA256 key of X-Sextant-Signature; never log */
} config_webhook;

/* The webhooks; items NULL when count is 0. */
#define CONFIG_WEBHOOKS_MAX 16
typedef struct config_webhooks {
    config_webhook *items;
    size_t count;
} config_webhooks;

/* The scheme and host of a webhook URL ("https://hooks.example.com:8443") into out (n
 * bytes): what logs and the configuration dump show of it. Returns out. */
const char *config_webhook_origin(const char *url, char *out, size_t n);

/* The loaded configuration. Strings with a default are never NULL; optional strings are
 * NULL when unset. Owned by whoever called config_load; read-only after load, so any
 * thread may read it without locking. */
typedef struct sextant_config {
    struct {
        char *url;                    /* secret-bearing: log only through sx_redact_url */
        int64_t pool_size;            /* connections in the pool */
        int64_t connect_timeout_ms;   /* per connection attempt */
        int64_t statement_timeout_ms; /* 0 means no limit */
        bool prepared_statements;     /* prepare each statement once per connection */
        char *listen_url;             /* LISTEN connection; NULL: url. Secret-bearing like url */
        int64_t reconnect_backoff_min_ms; /* first wait before reconnecting */
        int64_t reconnect_backoff_max_ms; /* longest wait; >= the minimum */
        char *migrate_url;  /* the schema owner's; NULL: url. Secret-bearing like url */
        char *runtime_role; /* granted serve's rights by migrate; NULL: none */
    } database;
    struct {
        char *url;                        /* "" when the cache is disabled; secret-bearing */
        int64_t timeout_ms;               /* per command */
        char *key_prefix;                 /* prepended to every key */
        int64_t reconnect_backoff_min_ms; /* first wait before reconnecting */
        int64_t reconnect_backoff_max_ms; /* longest wait; >= the minimum */
        /* Parsed from url when it is set (host NULL otherwise). */
        char *host;     /* without brackets */
        int port;       /* 6379 when the URL names none */
        int db;         /* 0 when the URL names none */
        char *username; /* NULL when none */
        char *password; /* NULL when none; never log */
    } redis;
    struct {
        config_listen listen;
        int64_t threads;        /* MHD thread pool size */
        int64_t max_body_bytes; /* larger request bodies get 413 */
        config_tls tls;         /* client_ca_file unused */
        char *ui_dir;           /* the built web UI served at / (api/static.h); NULL: none */

        /* Connection limits (api/http_conn.c) and the admin listener. */
        config_listen admin_listen;          /* health and metrics only; text NULL: none */
        int64_t max_connections;             /* open connections on the API port */
        int64_t max_connections_per_address; /* of them, from one client address */
        int64_t header_timeout_ms;           /* request headers must be in within it */
        int64_t idle_timeout_ms;             /* a connection without traffic is closed */
    } http;
    struct {
        config_listen listen;
        config_tls tls;
    } grpc;
    /* The serving certificates of both listeners (server/certs.h): their reload and
     * expiry warning, and the managed mode, in which Sextant issues them itself. */
    struct {
        int64_t reload_interval_ms;      /* the certificate files are checked this often */
        int64_t expiry_warning_ms;       /* warn (log, /readyz notice) this long before notAfter */
        bool managed;                    /* true: both listeners serve the managed certificate */
        char *ca_cert_file;              /* managed: the issuing CA's PEM certificate */
        char *ca_key_file;               /* managed: its PEM private key; never log */
        char *managed_names;             /* managed: comma-separated DNS names and IP addresses */
        int64_t managed_lifetime_ms;     /* managed: validity of an issued certificate */
        int64_t managed_renew_before_ms; /* managed: the leader renews this long before notAfter */
    } tls;
    struct {
        char *id; /* this replica's name in logs, node status and leases */
    } replica;
    struct {
        sx_log_level level;
    } log;
    struct {
        bool enabled; /* false: /api/v1 answers without a token (and the daemon warns) */
        /* The HS256 key: auth.hs256_secret, or the contents of hs256_secret_file (one
         * trailing newline removed). NULL when HS256 is off. Never log. */
        char *hs256_secret;
        char *hs256_secret_file;      /* NULL unless the secret came from a file */
        char *rs256_public_key_file;  /* NULL when RS256 verification is off */
        char *rs256_public_key_pem;   /* the file's contents, checked to hold an RSA public key */
        char *rs256_private_key_file; /* NULL when RS256 minting is off */
        char *rs256_private_key_pem;  /* the file's contents (an RSA private key); never log */
        char *issuer;                 /* NULL: "iss" not checked */
        char *audience;               /* NULL: "aud" not checked */
        int64_t clock_skew_ms;        /* leeway on exp and nbf */
        char *policy_file;            /* NULL: the built-in RBAC policy (api/policy.h) */
        bool dev_sign_in;             /* local development only: sign in without a token */
        /* The longest exp - iat (exp - now without iat) of an accepted token. */
        int64_t max_token_lifetime_ms;
    } auth;
    /* Private keys in configs at rest (server/secrets.h). */
    struct {
        char *key_file;       /* keyring file (server/base/seal.h); NULL: none */
        bool allow_plaintext; /* no key_file: store private keys unsealed, else refuse */
    } secrets;
    struct {
        int64_t timeout_ms; /* budget for stopping every component */
    } shutdown;
    struct {
        int64_t load_timeout_ms;   /* how long start-up may take to load snapshots */
        int64_t check_interval_ms; /* latest versions compared with what is served */
    } snapshots;
    struct {
        int64_t ack_timeout_ms;              /* 0: a response may wait for its ACK/NACK forever */
        int64_t send_timeout_ms;             /* 0: a response may take forever to be written */
        char *default_group;                 /* proxy group of nodes that name no cluster */
        int64_t cq_threads;                  /* threads polling the gRPC completion queue */
        int64_t max_connection_age_ms;       /* 0: a connection may live forever */
        int64_t max_connection_age_grace_ms; /* open streams' time after the GOAWAY */
        int64_t max_receive_message_bytes;   /* larger request messages: RESOURCE_EXHAUSTED */
        int64_t max_streams;                 /* active streams per replica; 0: no bound */
        int64_t max_resource_names;          /* resource names in one request */
        int64_t max_resource_name_length;    /* bytes of one resource name */
        int64_t max_node_metadata_bytes;     /* the node's metadata, protobuf-encoded */
        int64_t min_client_ping_interval_ms; /* a client's pings closer than this are strikes */
        int64_t max_ping_strikes;            /* then GOAWAY; 0: never */
        char *auth;                          /* none, mtls, jwt or "mtls,jwt"; NULL: unset */
        char *mtls_node_id_from;             /* SAN patterns with {node}, comma-separated */
        int64_t auth_failure_interval_ms;    /* refusals: one log line and audit row per source */
    } xds;
    struct {
        int64_t idempotency_ttl_ms;  /* answers to Idempotency-Key requests kept this long */
        int64_t refusal_interval_ms; /* 401s and 429s: one audit row per key and interval */
    } api;
    struct {
        bool reads; /* also audit successful reads (GET and HEAD on /api/v1) */
    } audit;
    struct {
        int64_t read_rate, read_burst;           /* API reads per second per user, bucket size */
        int64_t write_rate, write_burst;         /* API writes per second per user, bucket size */
        int64_t auth_fail_rate, auth_fail_burst; /* failed authentications per second per
                                                  * client address, bucket size */
        int64_t redis_timeout_ms; /* longest a take waits for Redis before deciding alone */
    } ratelimit;
    struct {
        struct {
            int64_t max_listeners, max_routes, max_backends, max_endpoints;
        } config, group; /* quotas per config and per proxy group */
    } limits;
    struct {
        bool tls_on_privileged_ports;   /* HTTP listeners below 1024 (but 80) need TLS */
        bool refuse_private_endpoints;  /* private/loopback/link-local endpoints refused */
        int64_t regex_max_program_size; /* largest RE2 program size of a regex */
    } validation;
    struct {
        char *default_data_planes; /* "envoy,grpc,control": what a group that chose none serves */
        unsigned default_planes;   /* the same as VAL_PLANE_* bits (set by the loader) */
    } groups;
    struct {
        int64_t flush_interval_ms; /* debounce window for node status writes */
        int64_t max_pending;       /* bound on nodes with unwritten updates */
    } nodes;
    struct {
        int64_t stale_after_ms;        /* no activity this long: a connected node is stale */
        int64_t disconnected_after_ms; /* no activity this long: disconnected; > stale_after */
    } fleet;
    struct {
        int64_t tick_ms;                /* driver period */
        int64_t lease_ms;               /* deployment lease; take-over after it lapses */
        int64_t nack_threshold_percent; /* default NACK rate that halts a rollout */
        int64_t nack_min_sample;        /* default responses before the rate counts */
        int64_t wave_timeout_ms;        /* default wave timeout */
        int64_t health_failures;        /* default not-ready reports that halt a rollout */
    } rollouts;
    struct {
        int64_t retention_ms; /* live events older than this are deleted */
        int64_t keepalive_ms; /* keep-alive comment interval on an idle event stream */
        int64_t max_streams;  /* open event streams per replica; more get 503 */

        int64_t max_streams_per_user;   /* open event streams per token subject; more: 429 */
        int64_t max_stream_lifetime_ms; /* a stream ends after this (plus jitter) */
    } events;
    /* Leader election (server/leader.h) and the replicas' heartbeats (server/replicas.h). */
    struct {
        int64_t retry_ms;        /* a standby tries to take the leader lock this often */
        int64_t lease_ms;        /* the server ends a silent lock holder's session after it */
        int64_t check_ms;        /* the leader checks its lock session this often */
        int64_t heartbeat_ms;    /* each replica refreshes its replicas row this often */
        int64_t forget_after_ms; /* rows not refreshed for this long are deleted (leader) */
    } leader;
    /* Sextant's own alerts (server/alerts.h): how often the leader evaluates the rules,
     * their thresholds and windows, and the webhooks they are delivered to. */
    struct {
        bool enabled;                   /* false: no rule is evaluated */
        int64_t interval_ms;            /* the leader evaluates every rule this often */
        int64_t nack_rate_percent;      /* nack_rate: a group's NACK share above this... */
        int64_t nack_window_ms;         /* ...over this window... */
        int64_t nack_min_responses;     /* ...once it holds at least this many responses */
        int64_t disconnected_after_ms;  /* proxy_disconnected: disconnected this long... */
        int64_t disconnected_forget_ms; /* ...and not longer than this (gone for good) */
        int64_t deployment_window_ms;   /* deployment_failed: ended badly within this */
        int64_t replica_lost_after_ms;  /* replica_lost: no heartbeat for this long; 0: three
                                           leader.heartbeat */
        config_webhooks webhooks;       /* where alerts are POSTed; count 0: nowhere */
        int64_t webhook_timeout_ms;     /* one POST may take this long */
        int64_t webhook_retries;        /* failed POSTs are retried this many times... */
        int64_t webhook_backoff_min_ms; /* ...after this wait, doubling... */
        int64_t webhook_backoff_max_ms; /* ...up to this */
    } alerts;
    /* The Kubernetes Gateway API source (server/k8s/): what it watches, how it names the
     * groups of the Gateways it translates, how it batches and bounds a translation. */
    struct {
        bool enabled;          /* false: nothing is watched and no managed config written */
        char *kubeconfig;      /* kubeconfig file (its current context); NULL: in-cluster
                                  (service-account token, KUBERNETES_SERVICE_HOST/PORT) */
        char *controller_name; /* a GatewayClass is ours when its spec.controllerName is
                                  this ("sextant.dev/gateway-controller") */
        /* The proxy group of a Gateway: text in which "<namespace>" and "<gateway>" stand
         * for the Gateway's namespace and name (default "<namespace>/<gateway>"); expand
         * it with config_k8s_group. */
        char *group_template;
        config_addresses gateway_addresses; /* written to each Gateway's status.addresses;
                                               count 0: the data plane Service's */
        int64_t settle_delay_ms;            /* a build starts this long after the last change... */
        int64_t settle_max_ms;            /* ...and at the latest this long after the first one of a
                                             burst; >= settle_delay_ms */
        int64_t max_input_objects;        /* objects one build may read; 0: no limit */
        int64_t max_objects_per_snapshot; /* IR objects (listeners, routes, backends,
                                             secrets) one Gateway's spec may hold; 0: none */
        int64_t max_endpoints_per_snapshot; /* endpoints one Gateway's spec may hold; 0: none */
        int64_t resync_ms;                  /* every judged object is reconciled again this often
                                               without an event (no relist); 0: never */
        int64_t max_backoff_ms;             /* longest requeue delay of an object whose reconcile
                                               failed (1 s doubling up to this) */
        int64_t watch_timeout_ms; /* timeoutSeconds of each watch request (whole seconds) */
    } k8s;
    char *source_file;     /* the YAML file read, NULL when none */
    sx_fielderrs warnings; /* non-fatal notes, such as unknown SEXTANT_* variables */
} sextant_config;

/*
 * Loads the configuration: defaults, then the YAML file at path_or_null (NULL: no
 * file), then every SEXTANT_* variable in envp (a NULL-terminated "NAME=value" array,
 * such as environ; NULL allowed). Validates everything and reports every problem into
 * errs at once, each with the key as its path, or "SEXTANT_X (key)" when the value came
 * from the environment, or the file name for YAML syntax and I/O errors.
 *
 * On success returns 0 and *out is a new configuration (free with config_free). On
 * failure returns SX_EINVAL, *out is NULL and errs holds at least one entry.
 */
int config_load(const char *path_or_null, char **envp, sextant_config **out,
                sx_fielderrs *errs) SX_MUSTCHECK;

/* Frees a configuration; NULL allowed. */
void config_free(sextant_config *cfg);

/* The whole configuration as a nested JSON object keyed like the YAML file, safe to log:
 * URLs go through sx_redact_url, secrets become "***". New reference, caller owns. */
json_t *config_dump_json(const sextant_config *cfg);

/* Appends the key reference (key, variable, default, description) used by
 * `sextant serve --help` to out. */
void config_write_help(sx_buf *out);

/* Parses a duration ("500ms", "1m30s", "0") into milliseconds. Returns 0, or SX_EINVAL
 * with the reason in why (a lowercase phrase, no value quoted). */
int config_parse_duration(const char *s, int64_t *out_ms, char *why, size_t whylen) SX_MUSTCHECK;

/* Formats a duration in milliseconds canonically ("1m30s", "500ms", "0s") into out. */
const char *config_format_duration(int64_t ms, char *out, size_t outlen);

/* The proxy group of Gateway ns/gateway under tpl (k8s.group_template) into out (n bytes):
 * every "<namespace>" replaced by ns and every "<gateway>" by gateway. Returns 0, or
 * SX_EINVAL when the name would be empty or longer than 253 bytes (the longest group
 * name) or does not fit in out; out is "" then. */
int config_k8s_group(const char *tpl, const char *ns, const char *gateway, char *out,
                     size_t n) SX_MUSTCHECK;

/* Parses "host:port" or "[v6]:port" into out (owned strings; release with
 * config_listen_clear). Returns 0, or SX_EINVAL with a message such as
 * `invalid port "80x": must be between 1 and 65535` in why. */
int config_parse_listen(const char *s, config_listen *out, char *why, size_t whylen) SX_MUSTCHECK;
void config_listen_clear(config_listen *l);

#endif
