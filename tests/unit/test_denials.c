/*
 * test_denials.c — refusals recorded in aggregate (server/denials.c): one row per
 * action, status, address and actor per interval, its count and reasons right; rows
 * only once the interval is over (or at the final flush); what the client sent is cut
 * and made valid UTF-8; past the key limit, one overflow row without an address keeps
 * the count; the flushing thread writes rows on its own.
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/base/clock.h"
#include "server/denials.h"

/* The rows handed to the audit writer, as JSON objects. */
typedef struct rows {
    json_t *all;
} rows;

static int collect(void *ctx, const audit_new *r, sx_err *err)
{
    (void)err;
    rows *rs = ctx;
    json_array_append_new(rs->all,
                          json_pack("{s:s,s:s,s:s,s:s,s:s,s:i,s:s?,s:s?,s:O}", "actor", r->actor,
                                    "role", r->actor_role ? r->actor_role : "", "action", r->action,
                                    "type", r->resource_type, "result", r->result, "status",
                                    r->status_code, "source", r->source_ip, "resource_id",
                                    r->resource_id, "details", r->details));
    return 0;
}

static denial unauth(const char *source, const char *reason, const char *route)
{
    return (denial){.action = "api.authenticate",
                    .resource_type = "api",
                    .status_code = 401,
                    .source = source,
                    .reason = reason,
                    .target = route};
}

TL_TEST(test_one_row_per_key_and_interval)
{
    rows rs = {json_array()};
    denials *d = denials_create(1000, "routes", collect, &rs);
    denial a = unauth("10.0.0.1", "missing bearer token", "GET /api/v1/configs");
    denial b = unauth("10.0.0.1", "bad signature", "POST /api/v1/configs");
    assert_true(denials_note(d, &a, 0));
    for (int i = 1; i < 500; i++)
        assert_false(denials_note(d, &a, i));
    assert_false(denials_note(d, &b, 600));
    /* another address, another status, another actor: keys of their own */
    denial c = unauth("10.0.0.2", "bad signature", "GET /api/v1/configs");
    assert_true(denials_note(d, &c, 700));
    denial limited = {.action = "api.request",
                      .resource_type = "api",
                      .status_code = 429,
                      .source = "10.0.0.1",
                      .actor = "bob",
                      .actor_role = "viewer",
                      .reason = "too many read requests",
                      .target = "GET /api/v1/configs"};
    assert_true(denials_note(d, &limited, 800));
    limited.actor = "carol";
    assert_true(denials_note(d, &limited, 800));
    assert_int_equal(denials_pending(d), 504);

    denials_flush(d, 999, false); /* the first interval is not over */
    assert_int_equal(json_array_size(rs.all), 0);
    denials_flush(d, 1000, false);
    assert_int_equal(json_array_size(rs.all), 1);
    tl_assert_json_is(json_array_get(rs.all, 0),
                      "{\"actor\":\"anonymous\",\"role\":\"\",\"action\":\"api.authenticate\","
                      "\"type\":\"api\",\"result\":\"denied\",\"status\":401,"
                      "\"source\":\"10.0.0.1\",\"resource_id\":\"GET /api/v1/configs\","
                      "\"details\":{\"count\":501,\"reasons\":{\"missing bearer token\":500,"
                      "\"bad signature\":1},\"routes\":[\"GET /api/v1/configs\","
                      "\"POST /api/v1/configs\"],\"clients\":[],\"interval_s\":1}}");
    /* the address's next refusal opens a new interval */
    assert_true(denials_note(d, &a, 1001));
    denials_flush(d, 0, true);
    assert_int_equal(json_array_size(rs.all), 5);
    assert_int_equal(denials_pending(d), 0);
    int64_t total = 0;
    size_t i;
    json_t *r;
    json_array_foreach(rs.all, i, r)
    {
        total += json_integer_value(json_object_get(json_object_get(r, "details"), "count"));
        if (strcmp(json_string_value(json_object_get(r, "action")), "api.request") == 0) {
            const char *who = json_string_value(json_object_get(r, "actor"));
            assert_true(strcmp(who, "bob") == 0 || strcmp(who, "carol") == 0);
            assert_string_equal(json_string_value(json_object_get(r, "role")), "viewer");
            assert_int_equal(json_integer_value(json_object_get(r, "status")), 429);
        }
    }
    assert_int_equal(total, 505);
    denials_destroy(d);
    json_decref(rs.all);
}

TL_TEST(test_client_text_is_cut_and_made_valid)
{
    rows rs = {json_array()};
    denials *d = denials_create(60000, "nodes", collect, &rs);
    char node[2000];
    memset(node, 'n', sizeof(node) - 1);
    node[sizeof(node) - 1] = '\0';
    node[3] = (char)0xff;
    denial in = {.action = "proxy.connect",
                 .resource_type = "proxy",
                 .status_code = 403,
                 .source = NULL,
                 .client = "jwt:mallory",
                 .reason = "node_not_covered",
                 .target = node};
    denials_note(d, &in, 0);
    denials_destroy(d); /* writes what is open */
    assert_int_equal(json_array_size(rs.all), 1);
    json_t *r = json_array_get(rs.all, 0);
    assert_string_equal(json_string_value(json_object_get(r, "actor")), "jwt:mallory");
    assert_true(json_is_null(json_object_get(r, "source")));
    const char *kept = json_string_value(json_object_get(r, "resource_id"));
    assert_true(strlen(kept) <= 256 + 2);
    assert_memory_equal(kept, "nnn\xef\xbf\xbd", 6);
    json_decref(rs.all);
}

TL_TEST(test_overflow_keeps_the_count)
{
    rows rs = {json_array()};
    denials *d = denials_create(60000, "routes", collect, &rs);
    char ip[64];
    for (int i = 0; i < DENIALS_MAX_KEYS + 100; i++) {
        snprintf(ip, sizeof(ip), "10.%d.%d.%d", (i >> 16) & 255, (i >> 8) & 255, i & 255);
        denial in = unauth(ip, "missing bearer token", "GET /api/v1/configs");
        denials_note(d, &in, 0);
    }
    denials_flush(d, 0, true);
    assert_int_equal(json_array_size(rs.all), DENIALS_MAX_KEYS + 1);
    int64_t total = 0, unknown = 0;
    size_t i;
    json_t *r;
    json_array_foreach(rs.all, i, r)
    {
        int64_t n = json_integer_value(json_object_get(json_object_get(r, "details"), "count"));
        total += n;
        if (json_is_null(json_object_get(r, "source")))
            unknown = n;
    }
    assert_int_equal(total, DENIALS_MAX_KEYS + 100);
    assert_int_equal(unknown, 100);
    denials_destroy(d);
    json_decref(rs.all);
}

/* The flushing thread writes a row once its interval is over, without another call. */
TL_TEST(test_started_flushes_on_its_own)
{
    rows rs = {json_array()};
    denials *d = denials_create(1000, "routes", collect, &rs);
    sx_err err;
    TL_OK(denials_start(d, &err));
    denial in = unauth("10.0.0.9", "bad signature", "GET /api/v1/whoami");
    denials_note(d, &in, sx_monotonic_ms());
    while (denials_pending(d) != 0)
        tl_sleep_ms(20); /* polls the event: the flusher has written the row */
    denials_destroy(d);
    assert_int_equal(json_array_size(rs.all), 1);
    json_decref(rs.all);
}

TL_MAIN()
