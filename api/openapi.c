/*
 * openapi.c — serves the OpenAPI 3 document of the REST API at
 * GET /api/v1/openapi.json.
 *
 * The document is one hand-written file, api/openapi.json, that says what each route
 * takes and answers. The build compiles it into the binary (cmake/embed_file.cmake,
 * which also refuses a file that does not parse) and the UI build generates its
 * TypeScript types and path table from the same file (ui/scripts/openapi.mjs), so the
 * server and the UI cannot disagree on a field. Only info.version is filled in here,
 * from the build. The integration test tests/integration/api/test_openapi_routes.c
 * checks that its paths and methods are exactly the routes of api/routes.c, so neither
 * can change without the other.
 */
#include "api/handlers_routes.h"

/* api/openapi.json, NUL-terminated (generated into the build tree). */
extern const char openapi_json_text[];

json_t *openapi_document(void)
{
    json_t *doc = json_loads(openapi_json_text, 0, NULL);
    if (doc == NULL)
        return NULL; /* out of memory: the text was checked to parse when it was built */
    json_object_set_new(json_object_get(doc, "info"), "version", json_string(SEXTANT_VERSION));
    return doc;
}

void api_openapi(http_request *req, rest_api *api, void *ud)
{
    (void)api;
    (void)ud;
    http_req_set_header(req, "Cache-Control", "no-cache");
    /* A NULL document (out of memory) becomes a 500 there. */
    http_respond_json(req, 200, openapi_document());
}
