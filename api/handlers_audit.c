/*
 * handlers_audit.c — GET /api/v1/audit: the append-only audit log, newest first,
 * filtered by user, action, resource type and id, result and a time window, one page
 * at a time. The same rows are there for plain SQL (README: "Auditing with SQL").
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/handlers_routes.h"
#include "api/handlers_common.h"
#include "server/catalog.h"

/* RFC 3339: a date, "T" (or "t" or a space), a time, and a zone; checked before the
 * database sees it so the caller gets a path-precise 400. */
static bool looks_rfc3339(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *p = strptime(s, "%Y-%m-%d", &tm);
    if (p == NULL || (*p != 'T' && *p != 't' && *p != ' '))
        return false;
    p = strptime(p + 1, "%H:%M:%S", &tm);
    if (p == NULL)
        return false;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'Z' || *p == 'z')
        return p[1] == '\0';
    if (*p != '+' && *p != '-')
        return false;
    struct tm off;
    memset(&off, 0, sizeof(off));
    p = strptime(p + 1, "%H:%M", &off);
    return p != NULL && *p == '\0';
}

static const char *const results[] = {AUDIT_SUCCESS, AUDIT_DENIED, AUDIT_FAILED};

static json_t *audit_item(const void *e)
{
    return api_audit_json(e);
}

int api_audit_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err)
{
    audit_filter f = {
        .actor = http_req_query(req, "user"),
        .action = http_req_query(req, "action"),
        .resource_type = http_req_query(req, "resource_type"),
        .resource_id = http_req_query(req, "resource_id"),
        .result = http_req_query(req, "result"),
        .since = http_req_query(req, "since"),
        .until = http_req_query(req, "until"),
        .limit = page->limit,
        .cursor = page->cursor,
    };
    json_t *d = json_array();
    if (f.since && !looks_rfc3339(f.since))
        api_detail(d, "since", "must be an RFC 3339 time such as 2026-05-01T00:00:00Z");
    if (f.until && !looks_rfc3339(f.until))
        api_detail(d, "until", "must be an RFC 3339 time such as 2026-05-01T00:00:00Z");
    if (f.result) {
        bool ok = false;
        for (size_t i = 0; i < sizeof(results) / sizeof(results[0]) && !ok; i++)
            ok = strcmp(f.result, results[i]) == 0;
        if (!ok)
            api_detail(d, "result", "must be success, denied or failed");
    }
    if (json_array_size(d) > 0) {
        page->details = d;
        return sx_err_set(err, SX_EINVAL, "invalid audit filter");
    }
    json_decref(d);
    audit_list list;
    int rc = catalog_audit(rest_server(api), &f, http_req_arena(req), &list, err);
    return API_PAGE_FILL(page, rc, list, audit_item);
}
