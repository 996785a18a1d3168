/*
 * revocations.c — the in-memory copy of the revoked bearer tokens (see revocations.h).
 *
 * The copy is two sorted arrays, token ids and (subject, time) pairs, searched with
 * bsearch under a read lock; a reload builds new arrays off the lock and swaps them in.
 * The list is written only by operators revoking tokens, so reloading it whole is
 * cheaper than keeping track of changes.
 */
#include "server/revocations.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/arena.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "storage/repo_revocations.h"

#define COMPONENT "revocations"

typedef struct subject_cut {
    char *subject;
    int64_t before; /* tokens issued at or before it are revoked */
} subject_cut;

struct revocations {
    pg_pool *pool;
    pthread_rwlock_t lock;
    char **jtis; /* (lock) sorted */
    size_t njti;
    subject_cut *subjects; /* (lock) sorted by subject */
    size_t nsub;
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_subject(const void *a, const void *b)
{
    return strcmp(((const subject_cut *)a)->subject, ((const subject_cut *)b)->subject);
}

static void free_lists(char **jtis, size_t njti, subject_cut *subjects, size_t nsub)
{
    for (size_t i = 0; i < njti; i++)
        sx_free(jtis[i]);
    sx_free(jtis);
    for (size_t i = 0; i < nsub; i++)
        sx_free(subjects[i].subject);
    sx_free(subjects);
}

int revocations_reload(revocations *r, sx_err *err)
{
    if (r->pool == NULL)
        return 0;
    sx_arena *a = sx_arena_create();
    revoke_row *rows = NULL;
    size_t n = 0;
    int rc = revoke_repo_load(r->pool, a, &rows, &n, err);
    if (rc != 0) {
        sx_arena_destroy(a);
        return rc;
    }
    char **jtis = sx_calloc(n + 1, sizeof(*jtis));
    subject_cut *subjects = sx_calloc(n + 1, sizeof(*subjects));
    size_t njti = 0, nsub = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].jti)
            jtis[njti++] = sx_strdup(rows[i].jti);
        else if (rows[i].subject)
            subjects[nsub++] = (subject_cut){sx_strdup(rows[i].subject), rows[i].issued_before};
    }
    sx_arena_destroy(a);
    qsort(jtis, njti, sizeof(*jtis), cmp_str);
    qsort(subjects, nsub, sizeof(*subjects), cmp_subject);

    pthread_rwlock_wrlock(&r->lock);
    char **old_j = r->jtis;
    subject_cut *old_s = r->subjects;
    size_t old_nj = r->njti, old_ns = r->nsub;
    bool changed = njti != old_nj || nsub != old_ns;
    r->jtis = jtis;
    r->njti = njti;
    r->subjects = subjects;
    r->nsub = nsub;
    pthread_rwlock_unlock(&r->lock);
    free_lists(old_j, old_nj, old_s, old_ns);
    if (changed)
        sx_log_fields(
            SX_LOG_INFO, COMPONENT,
            json_pack("{s:I,s:I}", "token_ids", (json_int_t)njti, "subjects", (json_int_t)nsub),
            "token revocations loaded");
    return 0;
}

/* The loader's callbacks: any notification or resync means "reload". */
static int on_notify(void *ctx, const char *channel, const char *payload)
{
    (void)channel;
    (void)payload;
    sx_err err;
    sx_err_clear(&err);
    int rc = revocations_reload(ctx, &err);
    if (rc != 0)
        sx_log_err(SX_LOG_WARN, COMPONENT, &err);
    return rc;
}

static int on_resync(void *ctx)
{
    return on_notify(ctx, NULL, NULL);
}

int revocations_create(pg_pool *pool, snap_loader *loader, revocations **out, sx_err *err)
{
    revocations *r = sx_calloc(1, sizeof(*r));
    r->pool = pool;
    pthread_rwlock_init(&r->lock, NULL);
    if (loader) {
        int rc = snap_loader_subscribe(loader, REVOKE_NOTIFY_CHANNEL, on_notify, on_resync, r, err);
        if (rc != 0) {
            revocations_destroy(r);
            *out = NULL;
            return rc;
        }
    }
    *out = r;
    return 0;
}

void revocations_destroy(revocations *r)
{
    if (r == NULL)
        return;
    free_lists(r->jtis, r->njti, r->subjects, r->nsub);
    pthread_rwlock_destroy(&r->lock);
    sx_free(r);
}

bool revocations_check(void *ctx, const char *jti, const char *sub, int64_t iat)
{
    revocations *r = ctx;
    bool revoked = false;
    pthread_rwlock_rdlock(&r->lock);
    if (jti && r->njti && bsearch(&jti, r->jtis, r->njti, sizeof(*r->jtis), cmp_str))
        revoked = true;
    if (!revoked && sub && r->nsub) {
        subject_cut key = {.subject = (char *)sub};
        const subject_cut *c =
            bsearch(&key, r->subjects, r->nsub, sizeof(*r->subjects), cmp_subject);
        revoked = c != NULL && (iat < 0 || iat <= c->before);
    }
    pthread_rwlock_unlock(&r->lock);
    return revoked;
}
