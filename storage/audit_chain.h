/*
 * audit_chain.h — the audit log's hash chains: verifying them, archiving old months,
 * creating the monthly partitions and granting the runtime role its rights.
 *
 * Every audit_log row belongs to its writer's chain (writer = the replica id) and holds
 * seq, prev_hash and hash, set by the table's insert trigger (migrations/
 * 0009_audit_chain.sql, which also documents the canonical bytes hashed). Here they are
 * checked from the outside: the bytes are rebuilt in C from the row's columns and
 * hashed, so a row rewritten behind the trigger's back, a removed row (a gap in seq or a
 * head beyond the last row) and a broken link all show.
 *
 * Memory: nothing returned needs freeing. Failures: database errors as pg_exec maps
 * them; a broken chain is not a failure of the call but a finding in the report.
 */
#ifndef SX_STORAGE_AUDIT_CHAIN_H
#define SX_STORAGE_AUDIT_CHAIN_H

#include <stdbool.h>
#include <stdio.h>

#include "server/base/err.h"
#include "storage/pg_pool.h"

/* At most this many problems are kept in a report (the first of each chain). */
#define AUDIT_CHAIN_MAX_PROBLEMS 16

typedef struct audit_chain_report {
    long long rows;    /* rows checked */
    long long chains;  /* writers seen (rows, heads or anchors) */
    int problems;      /* findings kept in problem[] */
    int more_problems; /* findings beyond AUDIT_CHAIN_MAX_PROBLEMS */
    /* One line per finding naming the writer, the row id and seq: "writer r1: row 42
     * (seq 7): hash does not match the row's contents". The first of each chain only. */
    char problem[AUDIT_CHAIN_MAX_PROBLEMS][400];
} audit_chain_report;

/*
 * Walks every chain in one REPEATABLE READ snapshot: for each writer, in seq order, from
 * its archive anchor (or seq 1 and 32 zero bytes), checks that seq has no gap, that each
 * row's prev_hash is the previous row's hash and that its hash is sha256 of its
 * canonical bytes; then that the writer's head names its last row. A finding goes into
 * *out (out->problems > 0) and the walk goes on with the next chain. Returns 0 when the
 * walk ran (whatever it found), a database error otherwise.
 */
int audit_chain_verify(pg_conn *c, audit_chain_report *out, sx_err *err) SX_MUSTCHECK;

typedef struct audit_archive_report {
    int partitions; /* months exported and detached */
    long long rows; /* rows exported */
    char first[32]; /* first archived partition, "" when none */
    char last[32];  /* last archived partition, "" when none */
} audit_archive_report;

/*
 * Archives every month wholly before `before` (an RFC 3339 time or a date; never the
 * current month): oldest first, each in its own transaction, writes the partition as
 * JSON lines to out — a "partition" line, an "anchor" line per writer (the chain
 * position the month continues), a "row" line per row in seq order, and a "head" line
 * per writer (its last row in the month) — checks the month's chains while doing so,
 * flushes and fsyncs out when it is a file, records the heads in audit_chain_anchors
 * and detaches the partition (it stays as table audit_log_YYYY_MM for the owner to
 * drop). Needs the owner's rights.
 *
 * Fails with SX_EINVAL for a bad time, SX_ECONFLICT when a month's chain is broken
 * (nothing of that month or later is archived; the message names the row), SX_EIO when
 * out cannot be written, database errors otherwise. Months archived before a failure
 * stay archived (*rep counts them).
 */
int audit_chain_archive(pg_conn *c, const char *before, FILE *out, audit_archive_report *rep,
                        sx_err *err) SX_MUSTCHECK;

/* Creates the partitions of this month and the next two if missing (through the
 * owner's SECURITY DEFINER function, so the runtime role may call it). *created (NULL
 * allowed) receives how many were created. */
int audit_chain_ensure_partitions(pg_conn *c, int *created, sx_err *err) SX_MUSTCHECK;

/* Grants the runtime role role its rights (sextant_grant_runtime_role, creating it
 * NOLOGIN when missing and allowed to); *granted false when the schema has no such
 * function (a migration folder without it). Needs the owner's rights. */
int audit_chain_grant_runtime(pg_conn *c, const char *role, bool *granted,
                              sx_err *err) SX_MUSTCHECK;

/* Whether the session's role owns audit_log or acts as its owner (*owner). */
int audit_chain_session_owns(pg_conn *c, bool *owner, sx_err *err) SX_MUSTCHECK;

#endif
