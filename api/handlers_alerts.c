/*
 * handlers_alerts.c — GET /api/v1/alerts: Sextant's own alerts, newest first, filtered
 * by state (server/alerts.h).
 */
#include <string.h>

#include "api/handlers_common.h"
#include "api/handlers_routes.h"
#include "server/alerts.h"

static json_t *alert_item(const void *item)
{
    return alerts_json(item);
}

int api_alerts_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err)
{
    const char *state = http_req_query(req, "state");
    if (state == NULL || state[0] == '\0' || strcmp(state, "all") == 0)
        state = NULL;
    else if (strcmp(state, "firing") != 0 && strcmp(state, "resolved") != 0) {
        page->details = api_details1("state", "must be firing, resolved or all");
        return sx_err_set(err, SX_EINVAL, "invalid query parameter state");
    }
    alert_list list;
    int rc = alerts_list(rest_server(api), state, page->limit, page->cursor, http_req_arena(req),
                         &list, err);
    return API_PAGE_FILL(page, rc, list, alert_item);
}
