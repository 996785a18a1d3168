/*
 * migrate.h — applies the numbered SQL files of migrations/ to a database, once each,
 * in name order, and reports how many are still pending.
 *
 * The files are compiled into the binary (cmake/embed_migrations.cmake generates
 * migrate_embedded_files), so `sextant migrate` needs nothing beside it; a folder can
 * be given instead. Each file runs in its own transaction and is recorded in
 * schema_migrations (name, sha256 of the file bytes, applied_at) in that same
 * transaction. A file must therefore not contain transaction control (BEGIN, COMMIT)
 * or statements that cannot run in a transaction (CREATE INDEX CONCURRENTLY).
 */
#ifndef SX_STORAGE_MIGRATE_H
#define SX_STORAGE_MIGRATE_H

#include "server/base/err.h"
#include "storage/pg_pool.h"

typedef struct migrate_file {
    const char *name; /* "0001_init.sql" */
    const char *sql;  /* the file's text */
} migrate_file;

/* The embedded files, sorted by name, ended by {NULL, NULL}. Generated at build time. */
extern const migrate_file migrate_embedded_files[];

/* The advisory lock key every migrate_run takes (pg_advisory_lock(bigint)): "SEXT" in
 * ASCII, shown in pg_locks as locktype advisory, classid 0, objid 1397053524. */
#define MIGRATE_LOCK_KEY 0x53455854LL

/*
 * Applies the pending migrations to the database at database_url: the embedded files
 * when dir_or_null is NULL, else every regular "*.sql" file of that folder, in byte
 * order of their names. Runs on its own connection (not a pool) and holds a session
 * advisory lock (MIGRATE_LOCK_KEY) from before it looks at schema_migrations until it
 * ends, so concurrent runs serialise: each file is applied exactly once and every run
 * succeeds. One log line is written per applied file.
 *
 * *applied_count (NULL allowed) receives how many files this call applied, also on
 * failure (the files applied before the failing one stay applied).
 *
 * Fails with:
 *   SX_EUNAVAILABLE  the database cannot be reached;
 *   SX_EIO           the folder or one of its files cannot be read;
 *   SX_ECONFLICT     an already-applied file has changed ("migration X was changed after
 *                    it was applied", detail with both checksums); nothing is applied;
 *   other codes      a file failed: its transaction is rolled back, the message names
 *                    the file and the SQL error, the detail gives the line.
 */
int migrate_run(const char *database_url, const char *dir_or_null, int *applied_count,
                sx_err *err) SX_MUSTCHECK;

/*
 * Counts the embedded migrations not yet recorded in schema_migrations (all of them
 * when the table does not exist yet); readiness uses it. Fails with the pool's errors
 * when the database is unreachable, and with SX_ECONFLICT when an applied file has a
 * different checksum than the embedded one (the binary and the database disagree).
 */
int migrate_status(pg_pool *pool, int *pending, sx_err *err) SX_MUSTCHECK;

#endif
