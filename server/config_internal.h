/*
 * config_internal.h — what the configuration's files share: the key table's types, the
 * loader's state and the helpers the YAML reader and the loader both use.
 *
 * server/config.c is the loader (defaults, environment overrides, value parsers, cross-key
 * checks), server/config_keys.c the table of every key (with --help and the JSON dump it
 * drives), server/config_yaml.c the YAML file reader, server/config_k8s.c the parsers and
 * rules of the Kubernetes source's keys. Nothing outside these four files includes this
 * header: the rest of the daemon sees only server/config.h.
 */
#ifndef SX_SERVER_CONFIG_INTERNAL_H
#define SX_SERVER_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/config.h"

#define MS_MINUTE (60 * 1000LL)
#define MS_HOUR   (60 * MS_MINUTE)
#define MS_DAY    (24 * MS_HOUR)

/* How a key's text becomes a value. The field at key_def.off has the type in brackets. */
typedef enum key_kind {
    K_DBURL,     /* [char *] libpq connection string, checked by PQconninfoParse */
    K_REDISURL,  /* [char *] "" or redis://...; also fills redis.host/port/db/... */
    K_INT,       /* [int64_t] decimal integer within min..max */
    K_DURATION,  /* [int64_t] milliseconds within min..max */
    K_BOOL,      /* [bool] */
    K_LISTEN,    /* [config_listen] */
    K_LEVEL,     /* [sx_log_level] */
    K_FILE,      /* [char *] path of a readable regular file; "" means unset */
    K_SECRET,    /* [char *] never echoed; "" means unset */
    K_TEXT,      /* [char *] free text; "" means unset */
    K_PREFIX,    /* [char *] short token without spaces */
    K_REPLICA,   /* [char *] replica name; default computed from host name and pid */
    K_ADDRESSES, /* [config_addresses] comma-separated IP addresses and host names */
    K_WEBHOOKS,  /* [config_webhooks] JSON array of {url, secret}; a YAML list of mappings */
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

/* Every key, in --help order; config_nkeys entries. */
extern const key_def config_keys[];
extern const size_t config_nkeys;

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
    raw_value *raw;  /* config_nkeys entries, owned */
    char (*env)[64]; /* config_nkeys SEXTANT_ names, computed from config_keys[].path; owned */
    char **sections; /* section paths the file opened, for duplicate detection */
    size_t nsections;
} loader;

/* The field of key i in cfg (its type is the one key_kind names). */
void *config_key_field(sextant_config *cfg, size_t i);
const void *config_key_cfield(const sextant_config *cfg, size_t i);
/* The SEXTANT_ variable of a key path into out (n bytes). */
void config_env_name(const char *path, char *out, size_t n);
/* The index of the key path, or -1. */
int config_key_find(const char *path);
/* True when path is a proper prefix section of some key ("http", "http.tls"). */
bool config_key_is_section(const char *path);
/* s quoted for a message into out (escaped, cut at 80 bytes); returns out. */
const char *config_quote(const char *s, char *out, size_t n);
/* Edit distance of a and b; SIZE_MAX when either is longer than 64 bytes. */
size_t config_levenshtein(const char *a, const char *b);
/* The sibling of an unknown key name under prefix closest in spelling (into out), or NULL. */
const char *config_suggest_key(const char *prefix, const char *name, char *out, size_t n);

/* Reports a problem with key i (labelled with its variable when the environment set it)
 * and marks the key failed, so cross-key checks skip it. */
void config_bad(loader *L, size_t i, const char *fmt, ...) SX_PRINTF(3, 4);

/* Parses a comma-separated list of IP addresses and DNS host names (spaces around the
 * commas allowed, "" for none) into out (owned; release with config_addresses_clear).
 * Returns 0, or SX_EINVAL with the first bad entry named in why. */
int config_parse_addresses(const char *s, config_addresses *out, char *why,
                           size_t whylen) SX_MUSTCHECK;
void config_addresses_clear(config_addresses *l);

/* Parses a JSON array of {"url": "http(s)://...", "secret": "..."} objects (at most
 * CONFIG_WEBHOOKS_MAX; "" or "[]" for none) into out (owned; release with
 * config_webhooks_clear). Returns 0, or SX_EINVAL with the reason in why, which never
 * quotes a secret (server/config_webhooks.c). */
int config_parse_webhooks(const char *s, config_webhooks *out, char *why,
                          size_t whylen) SX_MUSTCHECK;
void config_webhooks_clear(config_webhooks *l);

/* The rules between the k8s.* keys (run after every key is parsed). */
void config_check_k8s(loader *L);

/* The rules between the alerts.* keys (run after every key is parsed;
 * server/config_webhooks.c). */
void config_check_alerts(loader *L);

/* Reads the YAML file at path into L->raw (scalars only; parsing comes later). Every
 * problem is added to L->errs; nothing is returned because loading goes on. */
void config_yaml_read(loader *L, const char *path);

#endif
