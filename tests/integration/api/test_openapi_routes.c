/*
 * test_openapi_routes.c — the OpenAPI document served at /api/v1/openapi.json
 * (api/openapi.json, compiled in by api/openapi.c) describes exactly the routes the
 * router registers (api/routes.c): every route of the table is an operation of the
 * document and every operation of the document is a route, each operation is
 * well-formed (an operationId, a 2xx response, the error responses of the pipeline),
 * every $ref resolves, operationIds are unique, every required field of a schema is
 * one of its properties, and info.version is the build's.
 */
#include "tests/lib/testlib.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "api/handlers_routes.h"

static void lower(const char *in, char *out, size_t n)
{
    size_t i = 0;
    for (; in[i] && i + 1 < n; i++)
        out[i] = (char)tolower((unsigned char)in[i]);
    out[i] = '\0';
}

TL_TEST(test_every_route_is_documented)
{
    size_t n;
    const api_route *r = api_routes(&n);
    json_t *doc = openapi_document();
    json_t *paths = json_object_get(doc, "paths");
    assert_non_null(paths);
    size_t missing = 0;
    for (size_t i = 0; i < n; i++) {
        char m[16];
        lower(r[i].method, m, sizeof(m));
        json_t *op = json_object_get(json_object_get(paths, r[i].pattern), m);
        if (op == NULL) {
            print_error("route %s %s is not in the OpenAPI document\n", r[i].method, r[i].pattern);
            missing++;
        }
    }
    assert_int_equal(missing, 0);
    json_decref(doc);
}

TL_TEST(test_every_documented_operation_is_a_route)
{
    size_t n;
    const api_route *r = api_routes(&n);
    json_t *doc = openapi_document();
    const char *path;
    json_t *item;
    size_t extra = 0, ops = 0;
    json_object_foreach(json_object_get(doc, "paths"), path, item)
    {
        const char *method;
        json_t *op;
        json_object_foreach(item, method, op)
        {
            ops++;
            bool found = false;
            for (size_t i = 0; i < n && !found; i++) {
                char m[16];
                lower(r[i].method, m, sizeof(m));
                found = strcmp(r[i].pattern, path) == 0 && strcmp(m, method) == 0;
            }
            if (!found) {
                print_error("the document has %s %s, which the router does not\n", method, path);
                extra++;
            }
        }
    }
    assert_int_equal(extra, 0);
    assert_int_equal(ops, n);
    json_decref(doc);
}

/* Resolves "#/components/KIND/NAME" in doc. */
static json_t *resolve(json_t *doc, const char *ref)
{
    if (strncmp(ref, "#/components/", 13) != 0)
        return NULL;
    char kind[64], name[128];
    if (sscanf(ref + 13, "%63[^/]/%127s", kind, name) != 2)
        return NULL;
    return json_object_get(json_object_get(json_object_get(doc, "components"), kind), name);
}

static size_t check_refs(json_t *doc, json_t *v)
{
    size_t bad = 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_object_foreach(v, k, c)
        {
            if (strcmp(k, "$ref") == 0) {
                if (resolve(doc, json_string_value(c)) == NULL) {
                    print_error("unresolved $ref %s\n", json_string_value(c));
                    bad++;
                }
            } else {
                bad += check_refs(doc, c);
            }
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c)
        {
            bad += check_refs(doc, c);
        }
    }
    return bad;
}

TL_TEST(test_document_is_well_formed)
{
    json_t *doc = openapi_document();
    assert_string_equal(json_string_value(json_object_get(doc, "openapi")), "3.0.3");
    assert_non_null(json_object_get(json_object_get(doc, "info"), "title"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "info"), "version")),
                        SEXTANT_VERSION);
    assert_int_equal(check_refs(doc, doc), 0);

    json_t *ids = json_object();
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(doc, "paths"), path, item)
    {
        const char *method;
        json_t *op;
        json_object_foreach(item, method, op)
        {
            const char *id = json_string_value(json_object_get(op, "operationId"));
            assert_non_null(id);
            if (json_object_get(ids, id))
                fail_msg("operationId %s is used twice", id);
            json_object_set_new(ids, id, json_true());
            json_t *responses = json_object_get(op, "responses");
            bool ok2xx = false;
            const char *code;
            json_t *resp;
            json_object_foreach(responses, code, resp)
            {
                if (code[0] == '2')
                    ok2xx = true;
            }
            if (!ok2xx)
                fail_msg("%s %s has no success response", method, path);
            /* The pipeline in front of every route can answer these. */
            assert_non_null(json_object_get(responses, "401"));
            assert_non_null(json_object_get(responses, "403"));
            assert_non_null(json_object_get(responses, "429"));
            /* A route with a path parameter documents it. */
            if (strchr(path, '{')) {
                json_t *params = json_object_get(op, "parameters");
                assert_true(json_array_size(params) > 0);
            }
            /* Writes with a body say so. */
            if (strcmp(method, "post") == 0 || strcmp(method, "put") == 0) {
                assert_non_null(json_object_get(op, "requestBody"));
                assert_non_null(json_object_get(responses, "415"));
            }
        }
    }
    json_decref(ids);
    json_decref(doc);
}

/* Counts the names in v's "required" lists (v and everything under it) that are not
 * among the "properties" beside them: the UI's generated types would make them
 * required fields that no answer carries. */
static size_t check_required(json_t *v)
{
    size_t bad = 0;
    if (json_is_object(v)) {
        json_t *req = json_object_get(v, "required"), *props = json_object_get(v, "properties");
        size_t i;
        json_t *name;
        if (json_is_array(req))
            json_array_foreach(req, i, name)
            {
                if (json_object_get(props, json_string_value(name)) == NULL) {
                    print_error("required field %s is not a property\n", json_string_value(name));
                    bad++;
                }
            }
        const char *k;
        json_t *c;
        json_object_foreach(v, k, c)
        {
            bad += check_required(c);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c)
        {
            bad += check_required(c);
        }
    }
    return bad;
}

TL_TEST(test_required_fields_are_properties)
{
    json_t *doc = openapi_document();
    assert_int_equal(check_required(json_object_get(doc, "components")), 0);
    json_decref(doc);
}

TL_MAIN()
