/*
 * config.c — loads and validates the daemon's configuration (YAML file + SEXTANT_* env).
 *
 * One table, keys[], describes every key: its path, kind, default, limits, where it
 * lives in sextant_config and its help line; --help, the environment names, the JSON
 * dump and freeing are all driven by it, so a key exists in one place. Loading collects
 * raw text in passes: the file's scalars, then the environment's values (which win).
 * Then every key's text, or its default, goes through the parser of its kind; because
 * defaults take the same path, no default can be one the loader would refuse. Cross-key
 * rules (TLS pairs, JWT keys) run last. Every problem is added to the caller's
 * sx_fielderrs and loading goes on, so an operator fixes a file in one round trip.
 */
#include "server/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <yaml.h>

#include "server/base/mem.h"

#define MS_MINUTE       (60 * 1000LL)
#define MS_HOUR         (60 * MS_MINUTE)
#define MS_DAY          (24 * MS_HOUR)
#define MAX_DURATION_MS (365 * MS_DAY)
#define HS256_MIN_BYTES 32
#define SMALL_FILE_MAX  (1024 * 1024)
/* The web UI's default folder: the source tree's ui/dist (CMakeLists.txt sets it). */
#ifndef SEXTANT_UI_DIR
#define SEXTANT_UI_DIR "ui/dist"
#endif

/* How a key's text becomes a value. The field at key_def.off has the type in brackets. */
typedef enum key_kind {
    K_DBURL,    /* [char *] libpq connection string, checked by PQconninfoParse */
    K_REDISURL, /* [char *] "" or redis://...; also fills redis.host/port/db/... */
    K_INT,      /* [int64_t] decimal integer within min..max */
    K_DURATION, /* [int64_t] milliseconds within min..max */
    K_BOOL,     /* [bool] */
    K_LISTEN,   /* [config_listen] */
    K_LEVEL,    /* [sx_log_level] */
    K_FILE,     /* [char *] path of a readable regular file; "" means unset */
    K_SECRET,   /* [char *] never echoed; "" means unset */
    K_TEXT,     /* [char *] free text; "" means unset */
    K_PREFIX,   /* [char *] short token without spaces */
    K_REPLICA,  /* [char *] replica name; default computed from host name and pid */
} key_kind;

typedef struct key_def {
    const char *path;         /* "database.pool_size" */
    key_kind kind;            /* parser and field type */
    const char *def;          /* default as text; NULL: none (unset, or computed) */
    int64_t min, max;         /* K_INT and K_DURATION limits */
    size_t off;               /* offset of the field in sextant_config */
    const char *help_default; /* what --help prints as the default; NULL: def */
    const char *help;         /* one sentence for --help */
} key_def;

#define OFF(f) offsetof(sextant_config, f)

static const key_def keys[] = {
    {"database.url", K_DBURL, NULL, 0, 0, OFF(database.url), "required",
     "PostgreSQL connection string: a postgres:// URI or libpq key=value pairs."},
    {"database.pool_size", K_INT, "8", 1, 256, OFF(database.pool_size), NULL,
     "Connections the pool keeps open to PostgreSQL (1..256)."},
    {"database.connect_timeout", K_DURATION, "5s", 1, MS_HOUR, OFF(database.connect_timeout_ms),
     NULL, "Time allowed for one connection attempt."},
    {"database.statement_timeout", K_DURATION, "30s", 0, MS_DAY, OFF(database.statement_timeout_ms),
     NULL, "Longest a statement may run; 0 for no limit."},
    {"redis.url", K_REDISURL, "", 0, 0, OFF(redis.url), "\"\", cache disabled",
     "Redis cache: redis://[[user]:password@]host[:port][/db]; empty disables the cache."},
    {"redis.timeout", K_DURATION, "500ms", 1, MS_MINUTE, OFF(redis.timeout_ms), NULL,
     "Time allowed for one Redis command before the cache is bypassed."},
    {"redis.key_prefix", K_PREFIX, "sextant:", 0, 0, OFF(redis.key_prefix), NULL,
     "Prefix of every Redis key, so that deployments can share a Redis."},
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
    {"grpc.listen", K_LISTEN, "127.0.0.1:18000", 0, 0, OFF(grpc.listen), NULL,
     "xDS gRPC server: host:port or [v6]:port."},
    {"grpc.tls.cert_file", K_FILE, NULL, 0, 0, OFF(grpc.tls.cert_file), "none, plaintext",
     "PEM certificate chain for gRPC TLS; needs grpc.tls.key_file."},
    {"grpc.tls.key_file", K_FILE, NULL, 0, 0, OFF(grpc.tls.key_file), "none",
     "PEM private key for gRPC TLS; needs grpc.tls.cert_file."},
    {"grpc.tls.client_ca_file", K_FILE, NULL, 0, 0, OFF(grpc.tls.client_ca_file), "none",
     "PEM CA bundle; when set, proxies must present a certificate it signed (mTLS)."},
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
    {"auth.policy_file", K_FILE, NULL, 0, 0, OFF(auth.policy_file), "none, built-in policy",
     "YAML RBAC policy mapping roles to resources and actions (see README, Authentication)."},
    {"auth.dev_sign_in", K_BOOL, "false", 0, 0, OFF(auth.dev_sign_in), NULL,
     "Local development only: allow signing in without a token."},
    {"shutdown.timeout", K_DURATION, "10s", 1, MS_HOUR, OFF(shutdown.timeout_ms), NULL,
     "Budget for stopping every component on SIGTERM; past it the process exits non-zero."},
    {"snapshots.load_timeout", K_DURATION, "30s", 1, MS_HOUR, OFF(snapshots.load_timeout_ms), NULL,
     "How long start-up may spend loading the latest snapshots."},
    {"xds.ack_timeout", K_DURATION, "0", 0, MS_HOUR, OFF(xds.ack_timeout_ms), "0, off",
     "An xDS response not ACKed or NACKed within this time ends its stream; 0 never."},
    {"xds.send_timeout", K_DURATION, "30s", 0, MS_HOUR, OFF(xds.send_timeout_ms), NULL,
     "An xDS response the proxy does not read within this time ends its stream; 0 never."},
    {"xds.default_group", K_PREFIX, "default", 0, 0, OFF(xds.default_group), NULL,
     "Proxy group of nodes whose node.cluster (or cluster) is empty."},
    {"xds.cq_threads", K_INT, "2", 1, 64, OFF(xds.cq_threads), NULL,
     "Threads serving the gRPC completion queue of the xDS server (1..64)."},
    {"ratelimit.read_rate", K_INT, "50", 1, 1000000, OFF(ratelimit.read_rate), NULL,
     "Sustained API reads per second per user (token bucket refill)."},
    {"ratelimit.read_burst", K_INT, "100", 1, 1000000, OFF(ratelimit.read_burst), NULL,
     "API reads a user may make at once (token bucket size)."},
    {"ratelimit.write_rate", K_INT, "5", 1, 1000000, OFF(ratelimit.write_rate), NULL,
     "Sustained API writes per second per user."},
    {"ratelimit.write_burst", K_INT, "20", 1, 1000000, OFF(ratelimit.write_burst), NULL,
     "API writes a user may make at once."},
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
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

typedef enum { SRC_NONE, SRC_DEFAULT, SRC_FILE, SRC_ENV } source;

/* A key's text before parsing. */
typedef struct raw_value {
    char *text;       /* owned; NULL when nobody gave one */
    source src;       /* where text came from */
    bool file_seen;   /* the file named the key (even with a null value), for duplicates */
    bool failed;      /* an error was reported for this key; cross checks skip it */
    size_t file_line; /* 1-based line in the file when src is SRC_FILE */
} raw_value;

typedef struct loader {
    sextant_config *cfg;
    sx_fielderrs *errs;
    const char *file;
    raw_value raw[NKEYS];
    char env[NKEYS][64]; /* SEXTANT_ names, computed from keys[].path */
    char **sections;     /* section paths the file opened, for duplicate detection */
    size_t nsections;
} loader;

/* ------------------------------------------------------------------ small helpers */

static void *field(sextant_config *cfg, size_t i)
{
    return (char *)cfg + keys[i].off;
}

static const void *cfield(const sextant_config *cfg, size_t i)
{
    return (const char *)cfg + keys[i].off;
}

static void env_name(const char *path, char *out, size_t n)
{
    size_t j = (size_t)snprintf(out, n, "SEXTANT_");
    for (const char *p = path; *p && j + 1 < n; p++)
        out[j++] = *p == '.' ? '_' : (char)toupper((unsigned char)*p);
    out[j] = '\0';
}

static int find_key(const char *path)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].path, path) == 0)
            return (int)i;
    return -1;
}

/* True when path is a proper prefix section of some key ("http", "http.tls"). */
static bool is_section(const char *path)
{
    size_t n = strlen(path);
    for (size_t i = 0; i < NKEYS; i++)
        if (strncmp(keys[i].path, path, n) == 0 && keys[i].path[n] == '.')
            return true;
    return false;
}

/* Writes s quoted for a message: escapes quotes and control bytes, cut at 80 bytes. */
static const char *quote(const char *s, char *out, size_t n)
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

static size_t levenshtein(const char *a, const char *b)
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
static const char *suggest_key(const char *prefix, const char *name, char *out, size_t n)
{
    size_t plen = strlen(prefix), best = 3;
    const char *found = NULL;
    for (size_t i = 0; i < NKEYS; i++) {
        const char *p = keys[i].path;
        if (plen) {
            if (strncmp(p, prefix, plen) != 0 || p[plen] != '.')
                continue;
            p += plen + 1;
        }
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        char seg[64];
        snprintf(seg, sizeof(seg), "%.*s", (int)len, p);
        size_t d = levenshtein(seg, name);
        if (d < best && d < strlen(seg)) {
            best = d;
            snprintf(out, n, "%s", seg);
            found = out;
        }
    }
    return found;
}

/* Reads a whole regular file of at most max bytes into a new NUL-terminated string.
 * Returns NULL with the reason in why. */
static char *read_small_file(const char *path, size_t max, size_t *len_out, char *why,
                             size_t whylen)
{
    char qp[128];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, whylen, "cannot read %s: %s", quote(path, qp, sizeof(qp)), strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "%s is not a regular file", quote(path, qp, sizeof(qp)));
        close(fd);
        return NULL;
    }
    if ((size_t)st.st_size > max) {
        snprintf(why, whylen, "%s is larger than %zu bytes", quote(path, qp, sizeof(qp)), max);
        close(fd);
        return NULL;
    }
    char *data = sx_malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, data + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(why, whylen, "cannot read %s: %s", quote(path, qp, sizeof(qp)),
                     r < 0 ? strerror(errno) : "file shrank while being read");
            sx_free(data);
            close(fd);
            return NULL;
        }
        got += (size_t)r;
    }
    data[got] = '\0';
    close(fd);
    if (len_out)
        *len_out = got;
    return data;
}

/* Checks that path names a regular file this process can open for reading. */
static int check_readable_file(const char *path, char *why, size_t whylen)
{
    char qp[128];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, whylen, "cannot read %s: %s", quote(path, qp, sizeof(qp)), strerror(errno));
        return SX_EIO;
    }
    struct stat st;
    int rc = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? 0 : SX_EIO;
    if (rc != 0)
        snprintf(why, whylen, "%s is not a regular file", quote(path, qp, sizeof(qp)));
    close(fd);
    return rc;
}

/* ------------------------------------------------------------------ error reporting */

/* The label an error about key i carries: the key, or "SEXTANT_X (key)" from the env. */
static const char *key_label(const loader *L, size_t i, char *out, size_t n)
{
    if (L->raw[i].src == SRC_ENV)
        snprintf(out, n, "%s (%s)", L->env[i], keys[i].path);
    else
        snprintf(out, n, "%s", keys[i].path);
    return out;
}

static void bad(loader *L, size_t i, const char *fmt, ...) SX_PRINTF(3, 4);
static void bad(loader *L, size_t i, const char *fmt, ...)
{
    char label[160], msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    L->raw[i].failed = true;
    sx_fielderrs_add(L->errs, key_label(L, i, label, sizeof(label)), "%s", msg);
}

/* ------------------------------------------------------------------ value parsers */

int config_parse_duration(const char *s, int64_t *out_ms, char *why, size_t whylen)
{
    static const char *expect = "expected a number with a unit (ms, s, m, h), such as \"500ms\" "
                                "or \"1m30s\"";
    if (s == NULL || *s == '\0') {
        snprintf(why, whylen, "%s", expect);
        return SX_EINVAL;
    }
    if (strcmp(s, "0") == 0) {
        *out_ms = 0;
        return 0;
    }
    int64_t total = 0;
    const char *p = s;
    while (*p) {
        if (!isdigit((unsigned char)*p)) {
            snprintf(why, whylen, "%s", expect);
            return SX_EINVAL;
        }
        int64_t v = 0;
        while (isdigit((unsigned char)*p)) {
            v = v * 10 + (*p++ - '0');
            if (v > MAX_DURATION_MS) {
                snprintf(why, whylen, "too large");
                return SX_EINVAL;
            }
        }
        int64_t mult;
        if (strncmp(p, "ms", 2) == 0) {
            mult = 1;
            p += 2;
        } else if (*p == 's') {
            mult = 1000;
            p++;
        } else if (*p == 'm') {
            mult = MS_MINUTE;
            p++;
        } else if (*p == 'h') {
            mult = MS_HOUR;
            p++;
        } else if (*p == '\0') {
            snprintf(why, whylen, "missing a unit (ms, s, m or h)");
            return SX_EINVAL;
        } else {
            snprintf(why, whylen, "unknown unit: use ms, s, m or h");
            return SX_EINVAL;
        }
        if (v > MAX_DURATION_MS / mult || total + v * mult > MAX_DURATION_MS) {
            snprintf(why, whylen, "too large");
            return SX_EINVAL;
        }
        total += v * mult;
    }
    *out_ms = total;
    return 0;
}

const char *config_format_duration(int64_t ms, char *out, size_t outlen)
{
    if (outlen == 0)
        return out;
    if (ms <= 0) {
        snprintf(out, outlen, "%s", ms == 0 ? "0s" : "invalid");
        return out;
    }
    int64_t h = ms / MS_HOUR, m = ms % MS_HOUR / MS_MINUTE, s = ms % MS_MINUTE / 1000,
            r = ms % 1000;
    size_t j = 0;
    out[0] = '\0';
    if (h && j < outlen)
        j += (size_t)snprintf(out + j, outlen - j, "%lldh", (long long)h);
    if (m && j < outlen)
        j += (size_t)snprintf(out + j, outlen - j, "%lldm", (long long)m);
    if (s && j < outlen)
        j += (size_t)snprintf(out + j, outlen - j, "%llds", (long long)s);
    if (r && j < outlen)
        snprintf(out + j, outlen - j, "%lldms", (long long)r);
    return out;
}

static bool valid_hostname(const char *h)
{
    size_t n = strlen(h), label = 0;
    if (n == 0 || n > 253)
        return false;
    for (const char *p = h; *p; p++) {
        if (*p == '.') {
            if (label == 0)
                return false;
            label = 0;
            continue;
        }
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
            return false;
        if (*p == '-' && label == 0)
            return false;
        if (++label > 63)
            return false;
    }
    return label > 0;
}

/* Parses a decimal port; returns 1..65535 or -1. */
static int parse_port(const char *s, size_t n)
{
    if (n == 0 || n > 5)
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v >= 1 && v <= 65535 ? v : -1;
}

/* Splits "host:port" / "[v6]:port" / "host" (port optional when allow_no_port) into a
 * host copy and port. Returns 0 or SX_EINVAL with why. */
static int split_hostport(const char *s, size_t n, bool allow_no_port, int default_port,
                          char **host_out, int *port_out, char *why, size_t whylen)
{
    char q[160];
    const char *host, *port = NULL;
    size_t hlen, plen = 0;
    if (n > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (close == NULL) {
            snprintf(why, whylen, "missing \"]\" after the IPv6 address");
            return SX_EINVAL;
        }
        host = s + 1;
        hlen = (size_t)(close - host);
        const char *rest = close + 1;
        size_t rlen = n - (size_t)(rest - s);
        if (rlen > 0) {
            if (rest[0] != ':') {
                snprintf(why, whylen, "expected \":port\" after \"]\"");
                return SX_EINVAL;
            }
            port = rest + 1;
            plen = rlen - 1;
        }
        char tmp[INET6_ADDRSTRLEN + 8];
        struct in6_addr a6;
        snprintf(tmp, sizeof(tmp), "%.*s", (int)(hlen < sizeof(tmp) ? hlen : 0), host);
        if (hlen == 0 || hlen >= sizeof(tmp) || inet_pton(AF_INET6, tmp, &a6) != 1) {
            char h[160];
            snprintf(h, sizeof(h), "%.*s", (int)hlen, host);
            snprintf(why, whylen, "invalid IPv6 address %s", quote(h, q, sizeof(q)));
            return SX_EINVAL;
        }
    } else {
        const char *colon = memchr(s, ':', n);
        host = s;
        hlen = colon ? (size_t)(colon - s) : n;
        if (colon) {
            if (memchr(colon + 1, ':', n - hlen - 1)) {
                snprintf(why, whylen, "an IPv6 address must be in brackets, such as [::1]:8080");
                return SX_EINVAL;
            }
            port = colon + 1;
            plen = n - hlen - 1;
        }
        char h[300];
        snprintf(h, sizeof(h), "%.*s", (int)hlen, host);
        if (hlen == 0) {
            snprintf(why, whylen, "missing host (use 0.0.0.0 or [::] for every interface)");
            return SX_EINVAL;
        }
        bool numeric = strspn(h, "0123456789.") == hlen;
        struct in_addr a4;
        if (numeric ? inet_pton(AF_INET, h, &a4) != 1 : !valid_hostname(h)) {
            snprintf(why, whylen, "invalid host %s", quote(h, q, sizeof(q)));
            return SX_EINVAL;
        }
    }
    int p = default_port;
    if (port == NULL) {
        if (!allow_no_port) {
            snprintf(why, whylen,
                     "missing port: expected host:port, such as 127.0.0.1:8080 or "
                     "[::1]:8080");
            return SX_EINVAL;
        }
    } else {
        p = parse_port(port, plen);
        if (p < 0) {
            char ps[64];
            snprintf(ps, sizeof(ps), "%.*s", (int)(plen < 40 ? plen : 40), port);
            snprintf(why, whylen, "invalid port %s: must be between 1 and 65535",
                     quote(ps, q, sizeof(q)));
            return SX_EINVAL;
        }
    }
    *host_out = sx_strndup(host, hlen);
    *port_out = p;
    return 0;
}

int config_parse_listen(const char *s, config_listen *out, char *why, size_t whylen)
{
    char *host = NULL;
    int port = 0;
    if (split_hostport(s, strlen(s), false, 0, &host, &port, why, whylen) != 0)
        return SX_EINVAL;
    out->text = sx_strdup(s);
    out->host = host;
    out->port = port;
    return 0;
}

void config_listen_clear(config_listen *l)
{
    sx_free(l->text);
    sx_free(l->host);
    l->text = l->host = NULL;
    l->port = 0;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decodes s[0..n) into a new string; NULL on a malformed escape or a NUL byte. */
static char *pct_decode(const char *s, size_t n)
{
    char *out = sx_malloc(n + 1);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[j++] = s[i];
            continue;
        }
        int hi = i + 1 < n ? hexval((unsigned char)s[i + 1]) : -1;
        int lo = i + 2 < n ? hexval((unsigned char)s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            sx_free(out);
            return NULL;
        }
        out[j++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[j] = '\0';
    return out;
}

/* Parses redis://[[user]:password@]host[:port][/db] into cfg->redis. */
static int parse_redis_url(const char *url, sextant_config *cfg, char *why, size_t whylen)
{
    char q[160];
    if (strncmp(url, "rediss://", 9) == 0) {
        snprintf(why, whylen, "TLS (rediss://) is not supported: use redis://");
        return SX_EINVAL;
    }
    if (strncmp(url, "redis://", 8) != 0) {
        snprintf(why, whylen, "the scheme must be redis://, such as redis://127.0.0.1:6379/0");
        return SX_EINVAL;
    }
    const char *auth = url + 8;
    if (strpbrk(auth, "?#")) {
        snprintf(why, whylen, "query parameters and fragments are not supported");
        return SX_EINVAL;
    }
    const char *slash = strchr(auth, '/');
    size_t alen = slash ? (size_t)(slash - auth) : strlen(auth);
    const char *at = NULL;
    for (size_t i = 0; i < alen; i++)
        if (auth[i] == '@')
            at = auth + i;
    char *user = NULL, *pass = NULL;
    const char *hp = auth;
    size_t hplen = alen;
    if (at) {
        const char *colon = memchr(auth, ':', (size_t)(at - auth));
        size_t ulen = colon ? (size_t)(colon - auth) : (size_t)(at - auth);
        user = ulen ? pct_decode(auth, ulen) : NULL;
        if (colon)
            pass = pct_decode(colon + 1, (size_t)(at - colon - 1));
        if ((ulen && user == NULL) || (colon && pass == NULL)) {
            sx_free(user);
            sx_free(pass);
            snprintf(why, whylen, "malformed percent-escape in the user or password");
            return SX_EINVAL;
        }
        if (pass && *pass == '\0') {
            sx_free(pass);
            pass = NULL;
        }
        hp = at + 1;
        hplen = alen - (size_t)(hp - auth);
    }
    char *host = NULL;
    int port = 0;
    if (hplen == 0) {
        snprintf(why, whylen, "missing host");
        goto fail;
    }
    if (split_hostport(hp, hplen, true, 6379, &host, &port, why, whylen) != 0)
        goto fail;
    long db = 0;
    if (slash && slash[1]) {
        char *end;
        errno = 0;
        db = strtol(slash + 1, &end, 10);
        if (!isdigit((unsigned char)slash[1]) || *end || errno || db > INT_MAX) {
            snprintf(why, whylen, "invalid database number %s: expected an integer from 0",
                     quote(slash + 1, q, sizeof(q)));
            sx_free(host);
            goto fail;
        }
    }
    cfg->redis.host = host;
    cfg->redis.port = port;
    cfg->redis.db = (int)db;
    cfg->redis.username = user;
    cfg->redis.password = pass;
    return 0;
fail:
    sx_free(user);
    sx_free(pass);
    return SX_EINVAL;
}

static int parse_bool(const char *s, bool *out)
{
    static const char *yes[] = {"true", "yes", "on", "1"};
    static const char *no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return SX_EINVAL;
}

/* Parses text for key i into its field; reports problems through bad(). */
static void parse_value(loader *L, size_t i, const char *text)
{
    const key_def *k = &keys[i];
    sextant_config *cfg = L->cfg;
    void *f = field(cfg, i);
    char why[512], q[200], dur_a[32], dur_b[32];

    switch (k->kind) {
    case K_DBURL: {
        if (*text == '\0') {
            bad(L, i, "must not be empty");
            return;
        }
        char *pqerr = NULL;
        PQconninfoOption *opts = PQconninfoParse(text, &pqerr);
        if (opts == NULL) {
            char red[512];
            sx_redact_url(text, red, sizeof(red));
            char *msg = pqerr ? pqerr : "out of memory";
            size_t ml = strlen(msg);
            while (ml && (msg[ml - 1] == '\n' || msg[ml - 1] == ' '))
                msg[--ml] = '\0';
            bad(L, i, "invalid connection string %s: %s", quote(red, q, sizeof(q)), msg);
            PQfreemem(pqerr);
            return;
        }
        PQconninfoFree(opts);
        *(char **)f = sx_strdup(text);
        return;
    }
    case K_REDISURL:
        if (*text && parse_redis_url(text, cfg, why, sizeof(why)) != 0) {
            char red[512];
            sx_redact_url(text, red, sizeof(red));
            bad(L, i, "invalid URL %s: %s", quote(red, q, sizeof(q)), why);
            return;
        }
        *(char **)f = sx_strdup(text);
        return;
    case K_INT: {
        char *end;
        errno = 0;
        long long v = strtoll(text, &end, 10);
        if (*text == '\0' || isspace((unsigned char)*text) || *end || errno) {
            bad(L, i, "expected an integer, got %s", quote(text, q, sizeof(q)));
            return;
        }
        if (v < k->min || v > k->max) {
            bad(L, i, "must be between %lld and %lld, got %lld", (long long)k->min,
                (long long)k->max, v);
            return;
        }
        *(int64_t *)f = v;
        return;
    }
    case K_DURATION: {
        int64_t ms;
        if (config_parse_duration(text, &ms, why, sizeof(why)) != 0) {
            bad(L, i, "invalid duration %s: %s", quote(text, q, sizeof(q)), why);
            return;
        }
        if (ms < k->min || ms > k->max) {
            bad(L, i, "must be between %s and %s, got %s",
                config_format_duration(k->min, dur_a, sizeof(dur_a)),
                config_format_duration(k->max, dur_b, sizeof(dur_b)), quote(text, q, sizeof(q)));
            return;
        }
        *(int64_t *)f = ms;
        return;
    }
    case K_BOOL:
        if (parse_bool(text, (bool *)f) != 0)
            bad(L, i, "expected true or false, got %s", quote(text, q, sizeof(q)));
        return;
    case K_LISTEN:
        if (config_parse_listen(text, (config_listen *)f, why, sizeof(why)) != 0)
            bad(L, i, "%s", why);
        return;
    case K_LEVEL:
        if (sx_log_parse_level(text, (sx_log_level *)f) != 0)
            bad(L, i, "expected one of debug, info, warn, error, got %s",
                quote(text, q, sizeof(q)));
        return;
    case K_FILE:
        if (*text == '\0')
            return;
        if (check_readable_file(text, why, sizeof(why)) != 0) {
            bad(L, i, "%s", why);
            return;
        }
        *(char **)f = sx_strdup(text);
        return;
    case K_SECRET:
    case K_TEXT:
        if (*text)
            *(char **)f = sx_strdup(text);
        return;
    case K_PREFIX: {
        size_t n = strlen(text);
        bool ok = n <= 64;
        for (const char *p = text; ok && *p; p++)
            ok = isgraph((unsigned char)*p) != 0;
        if (!ok) {
            bad(L, i, "must be at most 64 printable bytes without spaces, got %s",
                quote(text, q, sizeof(q)));
            return;
        }
        *(char **)f = sx_strdup(text);
        return;
    }
    case K_REPLICA: {
        size_t n = strlen(text);
        bool ok = n >= 1 && n <= 128;
        for (const char *p = text; ok && *p; p++)
            ok = isalnum((unsigned char)*p) || strchr("._:-", *p) != NULL;
        if (!ok) {
            bad(L, i, "must be 1 to 128 characters from A-Z a-z 0-9 . _ : -, got %s",
                quote(text, q, sizeof(q)));
            return;
        }
        *(char **)f = sx_strdup(text);
        return;
    }
    }
}

/* ------------------------------------------------------------------ YAML file */

static bool yaml_is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return n->data.scalar.length == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

static const char *yaml_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_MAPPING_NODE:
        return "mapping";
    case YAML_SEQUENCE_NODE:
        return "list";
    default:
        return "single value";
    }
}

static void walk_mapping(loader *L, yaml_document_t *doc, yaml_node_t *map, const char *prefix)
{
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top;
         pr++) {
        yaml_node_t *k = yaml_document_get_node(doc, pr->key);
        yaml_node_t *v = yaml_document_get_node(doc, pr->value);
        if (k == NULL || v == NULL)
            continue;
        size_t line = k->start_mark.line + 1;
        if (k->type != YAML_SCALAR_NODE) {
            sx_fielderrs_add(L->errs, *prefix ? prefix : L->file,
                             "keys must be plain names, got a %s (line %zu)", yaml_kind(k), line);
            continue;
        }
        const char *name = (const char *)k->data.scalar.value;
        char path[256];
        snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", name);
        int idx = find_key(path);
        if (idx >= 0) {
            raw_value *r = &L->raw[idx];
            if (r->file_seen) {
                sx_fielderrs_add(L->errs, path, "duplicate key (line %zu)", line);
                r->failed = true;
                continue;
            }
            r->file_seen = true;
            if (v->type != YAML_SCALAR_NODE) {
                sx_fielderrs_add(L->errs, path, "expected a single value, got a %s (line %zu)",
                                 yaml_kind(v), line);
                r->failed = true;
                continue;
            }
            if (yaml_is_null(v))
                continue;
            r->text = sx_strndup((const char *)v->data.scalar.value, v->data.scalar.length);
            if (strlen(r->text) != v->data.scalar.length) {
                sx_fielderrs_add(L->errs, path, "value contains a NUL byte (line %zu)", line);
                r->failed = true;
            }
            r->src = SRC_FILE;
            r->file_line = line;
        } else if (is_section(path)) {
            bool dup = false;
            for (size_t s = 0; s < L->nsections && !dup; s++)
                dup = strcmp(L->sections[s], path) == 0;
            if (dup) {
                sx_fielderrs_add(L->errs, path, "duplicate key (line %zu)", line);
                continue;
            }
            L->sections = sx_realloc(L->sections, (L->nsections + 1) * sizeof(char *));
            L->sections[L->nsections++] = sx_strdup(path);
            if (v->type == YAML_MAPPING_NODE)
                walk_mapping(L, doc, v, path);
            else if (!yaml_is_null(v))
                sx_fielderrs_add(L->errs, path, "expected a mapping of keys, got a %s (line %zu)",
                                 yaml_kind(v), line);
        } else {
            char q[160], sug[64];
            const char *s = suggest_key(prefix, name, sug, sizeof(sug));
            if (s)
                sx_fielderrs_add(L->errs, path, "unknown key %s (did you mean \"%s\"?) (line %zu)",
                                 quote(name, q, sizeof(q)), s, line);
            else
                sx_fielderrs_add(L->errs, path, "unknown key %s (line %zu)",
                                 quote(name, q, sizeof(q)), line);
        }
    }
}

static void yaml_syntax_error(loader *L, const yaml_parser_t *p)
{
    if (p->error == YAML_READER_ERROR) {
        sx_fielderrs_add(L->errs, L->file, "invalid YAML at byte %zu: %s", p->problem_offset,
                         p->problem ? p->problem : "unreadable input");
        return;
    }
    if (p->error == YAML_MEMORY_ERROR) {
        sx_fielderrs_add(L->errs, L->file, "out of memory while parsing YAML");
        return;
    }
    char ctx[256] = "";
    if (p->context)
        snprintf(ctx, sizeof(ctx), " (%s at line %zu, column %zu)", p->context,
                 p->context_mark.line + 1, p->context_mark.column + 1);
    sx_fielderrs_add(L->errs, L->file, "invalid YAML at line %zu, column %zu: %s%s",
                     p->problem_mark.line + 1, p->problem_mark.column + 1,
                     p->problem ? p->problem : "syntax error", ctx);
}

static void load_file(loader *L, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        sx_fielderrs_add(L->errs, path, "could not open the configuration file: %s",
                         strerror(errno));
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        sx_fielderrs_add(L->errs, path, "the configuration file is not a regular file");
        return;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        sx_fielderrs_add(L->errs, path, "could not open the configuration file: %s",
                         strerror(errno));
        return;
    }
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_file(&p, f);
    yaml_document_t doc;
    if (!yaml_parser_load(&p, &doc)) {
        yaml_syntax_error(L, &p);
    } else {
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (root && root->type == YAML_MAPPING_NODE)
            walk_mapping(L, &doc, root, "");
        else if (root && !yaml_is_null(root))
            sx_fielderrs_add(L->errs, path, "expected a mapping of keys at the top, got a %s",
                             yaml_kind(root));
        yaml_document_delete(&doc);
        if (root) {
            yaml_document_t more;
            if (!yaml_parser_load(&p, &more)) {
                yaml_syntax_error(L, &p);
            } else {
                if (yaml_document_get_root_node(&more))
                    sx_fielderrs_add(L->errs, path, "expected one YAML document, found more");
                yaml_document_delete(&more);
            }
        }
    }
    yaml_parser_delete(&p);
    fclose(f);
}

/* ------------------------------------------------------------------ environment */

static void load_env(loader *L, char **envp)
{
    for (char **e = envp; e && *e; e++) {
        if (strncmp(*e, "SEXTANT_", 8) != 0)
            continue;
        const char *eq = strchr(*e, '=');
        if (eq == NULL)
            continue;
        size_t nlen = (size_t)(eq - *e);
        int idx = -1;
        for (size_t i = 0; i < NKEYS && idx < 0; i++)
            if (strlen(L->env[i]) == nlen && strncmp(L->env[i], *e, nlen) == 0)
                idx = (int)i;
        if (idx < 0) {
            char name[128];
            snprintf(name, sizeof(name), "%.*s", (int)(nlen < 100 ? nlen : 100), *e);
            size_t best = 3;
            const char *sug = NULL;
            for (size_t i = 0; i < NKEYS; i++) {
                size_t d = levenshtein(L->env[i], name);
                if (d < best) {
                    best = d;
                    sug = L->env[i];
                }
            }
            if (sug)
                sx_fielderrs_add(&L->cfg->warnings, name,
                                 "not a configuration variable, ignored (did you mean %s?)", sug);
            else
                sx_fielderrs_add(&L->cfg->warnings, name, "not a configuration variable, ignored");
            continue;
        }
        raw_value *r = &L->raw[idx];
        sx_free(r->text);
        r->text = sx_strdup(eq + 1);
        r->src = SRC_ENV;
        /* A type error in the file is still reported; the value itself is overridden. */
    }
}

/* ------------------------------------------------------------------ cross-key rules */

static const char *set_str(const sextant_config *cfg, const char *path)
{
    int i = find_key(path);
    return i < 0 ? NULL : *(char *const *)cfield(cfg, (size_t)i);
}

static bool key_failed(const loader *L, const char *path)
{
    int i = find_key(path);
    return i >= 0 && L->raw[i].failed;
}

static void check_tls(loader *L, const char *prefix, bool has_ca)
{
    char cert[64], key[64], ca[64];
    snprintf(cert, sizeof(cert), "%s.cert_file", prefix);
    snprintf(key, sizeof(key), "%s.key_file", prefix);
    snprintf(ca, sizeof(ca), "%s.client_ca_file", prefix);
    bool c = set_str(L->cfg, cert) || key_failed(L, cert);
    bool k = set_str(L->cfg, key) || key_failed(L, key);
    if (c && !k)
        bad(L, (size_t)find_key(key), "required when %s is set", cert);
    if (k && !c)
        bad(L, (size_t)find_key(cert), "required when %s is set", key);
    if (has_ca && set_str(L->cfg, ca) && !(c && k))
        bad(L, (size_t)find_key(ca), "requires %s and %s (mutual TLS needs a server certificate)",
            cert, key);
}

/* Reads a PEM key file of key i and parses it with parse (PEM_read_bio_PUBKEY or
 * PEM_read_bio_PrivateKey); reports and returns NULL unless it holds an RSA key. On
 * success *pem_out is the file's text (owned by the caller). */
static EVP_PKEY *load_rsa_pem(loader *L, size_t i, const char *path, bool private_key,
                              char **pem_out)
{
    char why[512], q[200];
    size_t len;
    *pem_out = NULL;
    char *pem = read_small_file(path, SMALL_FILE_MAX, &len, why, sizeof(why));
    if (pem == NULL) {
        bad(L, i, "%s", why);
        return NULL;
    }
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    EVP_PKEY *pk = NULL;
    if (bio)
        pk = private_key ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL)
                         : PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    BIO_free(bio);
    ERR_clear_error();
    if (pk == NULL) {
        bad(L, i, "%s does not hold a PEM %s (\"-----BEGIN %s-----\")", quote(path, q, sizeof(q)),
            private_key ? "private key" : "public key", private_key ? "PRIVATE KEY" : "PUBLIC KEY");
    } else if (EVP_PKEY_base_id(pk) != EVP_PKEY_RSA) {
        bad(L, i, "%s holds a %s key that is not RSA", quote(path, q, sizeof(q)),
            private_key ? "private" : "public");
        EVP_PKEY_free(pk);
        pk = NULL;
    }
    if (pk == NULL) {
        explicit_bzero(pem, len);
        sx_free(pem);
        return NULL;
    }
    *pem_out = pem;
    return pk;
}

/* The JWT keys: one HS256 secret at most (inline or from a file, long enough), RSA
 * keys that parse, and a private key that belongs to the public key when both are set. */
static void check_auth(loader *L)
{
    sextant_config *cfg = L->cfg;
    size_t i_secret = (size_t)find_key("auth.hs256_secret");
    size_t i_file = (size_t)find_key("auth.hs256_secret_file");
    size_t i_pub = (size_t)find_key("auth.rs256_public_key_file");
    size_t i_priv = (size_t)find_key("auth.rs256_private_key_file");
    char why[512];

    if (cfg->auth.hs256_secret && cfg->auth.hs256_secret_file) {
        bad(L, i_file, "cannot be combined with auth.hs256_secret: set only one");
    } else if (cfg->auth.hs256_secret_file) {
        size_t len;
        char *s = read_small_file(cfg->auth.hs256_secret_file, 64 * 1024, &len, why, sizeof(why));
        if (s == NULL) {
            bad(L, i_file, "%s", why);
        } else {
            if (len && s[len - 1] == '\n')
                s[--len] = '\0';
            if (len && s[len - 1] == '\r')
                s[--len] = '\0';
            if (strlen(s) != len) {
                bad(L, i_file, "the secret contains a NUL byte");
                sx_free(s);
            } else if (len < HS256_MIN_BYTES) {
                bad(L, i_file, "the secret must be at least %d bytes long, got %zu",
                    HS256_MIN_BYTES, len);
                explicit_bzero(s, len);
                sx_free(s);
            } else {
                cfg->auth.hs256_secret = s;
            }
        }
    } else if (cfg->auth.hs256_secret && strlen(cfg->auth.hs256_secret) < HS256_MIN_BYTES) {
        bad(L, i_secret, "must be at least %d bytes long, got %zu", HS256_MIN_BYTES,
            strlen(cfg->auth.hs256_secret));
        sx_free(cfg->auth.hs256_secret);
        cfg->auth.hs256_secret = NULL;
    }

    EVP_PKEY *pub = NULL, *priv = NULL;
    if (cfg->auth.rs256_public_key_file)
        pub = load_rsa_pem(L, i_pub, cfg->auth.rs256_public_key_file, false,
                           &cfg->auth.rs256_public_key_pem);
    if (cfg->auth.rs256_private_key_file)
        priv = load_rsa_pem(L, i_priv, cfg->auth.rs256_private_key_file, true,
                            &cfg->auth.rs256_private_key_pem);
    if (pub && priv && EVP_PKEY_eq(pub, priv) != 1)
        bad(L, i_priv,
            "does not belong to the public key in auth.rs256_public_key_file: tokens it signs "
            "would be refused");
    EVP_PKEY_free(pub);
    EVP_PKEY_free(priv);
    ERR_clear_error();
}

static bool wildcard_host(const char *h)
{
    return strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0;
}

static void check_listeners(loader *L)
{
    const config_listen *h = &L->cfg->http.listen, *g = &L->cfg->grpc.listen;
    if (h->host == NULL || g->host == NULL || h->port != g->port)
        return;
    if (strcmp(h->host, g->host) == 0 || wildcard_host(h->host) || wildcard_host(g->host))
        bad(L, (size_t)find_key("grpc.listen"), "must not use the same port as http.listen (%s)",
            h->text);
}

/* Nodes that name no cluster need a group to land in. */
static void check_xds(loader *L)
{
    const char *g = L->cfg->xds.default_group;
    if (g != NULL && *g == '\0')
        bad(L, (size_t)find_key("xds.default_group"), "must not be empty");
}

/* Stale must come before disconnected, or no node could ever be stale. */
static void check_fleet(loader *L)
{
    if (key_failed(L, "fleet.stale_after") || key_failed(L, "fleet.disconnected_after"))
        return;
    const sextant_config *c = L->cfg;
    if (c->fleet.disconnected_after_ms > c->fleet.stale_after_ms)
        return;
    char s[32], d[32];
    config_format_duration(c->fleet.stale_after_ms, s, sizeof(s));
    config_format_duration(c->fleet.disconnected_after_ms, d, sizeof(d));
    bad(L, (size_t)find_key("fleet.stale_after"),
        "must be less than fleet.disconnected_after (%s), got %s", d, s);
    bad(L, (size_t)find_key("fleet.disconnected_after"),
        "must be greater than fleet.stale_after (%s), got %s", s, d);
}

/* ------------------------------------------------------------------ load / free */

static void default_replica_id(char *out, size_t n)
{
    char host[256];
    if (gethostname(host, sizeof(host)) != 0 || host[0] == '\0')
        snprintf(host, sizeof(host), "sextant");
    host[sizeof(host) - 1] = '\0';
    for (char *p = host; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
            *p = '-';
    char pid[32];
    snprintf(pid, sizeof(pid), "-%ld", (long)getpid());
    size_t room = n > strlen(pid) + 1 ? n - strlen(pid) - 1 : 0;
    snprintf(out, n, "%.*s%s", (int)(room < 100 ? room : 100), host, pid);
}

int config_load(const char *path_or_null, char **envp, sextant_config **out, sx_fielderrs *errs)
{
    *out = NULL;
    size_t errs_before = errs->count;
    loader L = {0};
    L.cfg = sx_calloc(1, sizeof(sextant_config));
    L.errs = errs;
    L.file = path_or_null;
    for (size_t i = 0; i < NKEYS; i++)
        env_name(keys[i].path, L.env[i], sizeof(L.env[i]));
    if (path_or_null) {
        L.cfg->source_file = sx_strdup(path_or_null);
        load_file(&L, path_or_null);
    }
    load_env(&L, envp);

    for (size_t i = 0; i < NKEYS; i++) {
        raw_value *r = &L.raw[i];
        if (r->failed && r->src != SRC_ENV)
            continue; /* its file entry was malformed; already reported */
        if (r->text) {
            parse_value(&L, i, r->text);
            continue;
        }
        if (keys[i].kind == K_DBURL) {
            bad(&L, i, "required: set it in the configuration file or in %s", L.env[i]);
        } else if (keys[i].kind == K_REPLICA) {
            char id[160];
            default_replica_id(id, sizeof(id));
            r->src = SRC_DEFAULT;
            parse_value(&L, i, id);
        } else if (keys[i].def) {
            r->src = SRC_DEFAULT;
            parse_value(&L, i, keys[i].def);
        }
    }
    check_tls(&L, "http.tls", false);
    check_tls(&L, "grpc.tls", true);
    check_auth(&L);
    check_listeners(&L);
    check_xds(&L);
    check_fleet(&L);

    for (size_t i = 0; i < NKEYS; i++)
        sx_free(L.raw[i].text);
    for (size_t s = 0; s < L.nsections; s++)
        sx_free(L.sections[s]);
    sx_free(L.sections);

    if (errs->count > errs_before) {
        config_free(L.cfg);
        return SX_EINVAL;
    }
    *out = L.cfg;
    return 0;
}

void config_free(sextant_config *cfg)
{
    if (cfg == NULL)
        return;
    for (size_t i = 0; i < NKEYS; i++) {
        switch (keys[i].kind) {
        case K_DBURL:
        case K_REDISURL:
        case K_FILE:
        case K_SECRET:
        case K_TEXT:
        case K_PREFIX:
        case K_REPLICA:
            sx_free(*(char **)field(cfg, i));
            break;
        case K_LISTEN:
            config_listen_clear((config_listen *)field(cfg, i));
            break;
        default:
            break;
        }
    }
    sx_free(cfg->redis.host);
    sx_free(cfg->redis.username);
    sx_free(cfg->redis.password);
    sx_free(cfg->auth.rs256_public_key_pem);
    if (cfg->auth.rs256_private_key_pem) {
        explicit_bzero(cfg->auth.rs256_private_key_pem, strlen(cfg->auth.rs256_private_key_pem));
        sx_free(cfg->auth.rs256_private_key_pem);
    }
    sx_free(cfg->source_file);
    sx_fielderrs_free(&cfg->warnings);
    sx_free(cfg);
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
    for (size_t i = 0; i < NKEYS; i++) {
        const char *leaf;
        json_t *o = parent_object(root, keys[i].path, &leaf);
        const void *f = cfield(cfg, i);
        json_t *v = NULL;
        char buf[1024];
        switch (keys[i].kind) {
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
    for (size_t i = 0; i < NKEYS; i++) {
        char env[64];
        env_name(keys[i].path, env, sizeof(env));
        const char *def = keys[i].help_default ? keys[i].help_default : keys[i].def;
        sx_buf_printf(out, "  %s  (%s; %s%s)\n      %s\n", keys[i].path, env,
                      keys[i].help_default ? "" : "default ", def ? def : "none", keys[i].help);
    }
}
