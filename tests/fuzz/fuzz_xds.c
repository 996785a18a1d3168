/*
 * fuzz_xds.c — libFuzzer target for the xDS request decoding and the three stream
 * protocols fed with what was decoded (server/xds: sotw.c, delta.c, control.c), with no
 * gRPC server: each request goes from protobuf bytes to the protocol's request exactly
 * as ads.c hands it over.
 *
 * Input: byte 0 picks the protocol (ADS state of the world, ADS Delta,
 * gateway.control.v1) and whether names are interned in a shared table; then records
 * of [op][len][len bytes]:
 *   op % 5 == 0  a request, the payload its protobuf encoding (DiscoveryRequest,
 *                DeltaDiscoveryRequest or gateway.control.v1 DiscoveryRequest); with
 *                op & 0x80 its nonce is replaced by the last response's, so ACKs and
 *                NACKs are reached
 *   op % 5 == 1  the group publishes a new snapshot (one of a few resource sets)
 *   op % 5 == 2  the stream takes its due responses
 *   op % 5 == 3  time passes
 *   op % 5 == 4  a gateway.control.v1 DataplaneStatusReport is checked
 * At the end the stream is freed and every interned name must have been released.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "envoy/service/discovery/v3/discovery.pb-c.h"
#include "gateway/control/v1/control.pb-c.h"
#include "server/base/err.h"
#include "server/base/mem.h"
#include "server/xds/ads.h"
#include "server/xds/control.h"
#include "server/xds/delta.h"
#include "server/xds/names.h"
#include "server/xds/sotw.h"
#include "tests/unit/xds/xds_fixture.h"

static const char *const SNAPSHOTS[] = {
    "sds:s=1;cds:a=1,b=1;eds:a=1,b=1;lds:l=1,m=1;rds:r=1",
    "sds:s=2;cds:a=1;eds:a=2;lds:l=1;rds:r=2",
    "cds:a=1,b=2,c=1;eds:a=1,b=2,c=1;lds:m=1;rds:r=1,q=1",
    "",
    "lds:l=2;rds:r=1",
};
#define NSNAPSHOTS (sizeof(SNAPSHOTS) / sizeof(SNAPSHOTS[0]))

enum { P_SOTW, P_DELTA, P_CONTROL };

typedef struct fz {
    int proto;
    xds_sotw sotw;
    xds_delta delta;
    xds_ctl ctl;
    xds_names *pool;
    int64_t now;
    long long version;
    char nonce[XDS_NONCE_LEN]; /* of the last response; "" before any */
} fz;

static void check_response(const xds_response *r)
{
    if ((unsigned)r->type >= TR_TYPE_COUNT || r->res == NULL)
        abort();
    for (size_t i = 0; i < r->n; i++)
        if (r->idx[i] >= r->res->count[r->type])
            abort();
    if (memchr(r->nonce, '\0', sizeof(r->nonce)) == NULL)
        abort();
}

static void on_sotw(fz *f, const uint8_t *p, size_t n, bool last_nonce)
{
    Envoy__Service__Discovery__V3__DiscoveryRequest *req =
        envoy__service__discovery__v3__discovery_request__unpack(NULL, n, p);
    if (req == NULL)
        return;
    tr_type t;
    if (tr_type_from_url(req->type_url, &t) == 0) {
        xds_sotw_request r = {
            .type = t,
            .nonce = last_nonce ? f->nonce : req->response_nonce,
            .names = req->resource_names,
            .name_count = req->n_resource_names,
            .is_nack = req->error_detail != NULL,
        };
        xds_req_outcome oc;
        xds_sotw_on_request(&f->sotw, &r, f->now, &oc);
    }
    envoy__service__discovery__v3__discovery_request__free_unpacked(req, NULL);
}

static void on_delta(fz *f, const uint8_t *p, size_t n, bool last_nonce)
{
    Envoy__Service__Discovery__V3__DeltaDiscoveryRequest *req =
        envoy__service__discovery__v3__delta_discovery_request__unpack(NULL, n, p);
    if (req == NULL)
        return;
    tr_type t;
    if (tr_type_from_url(req->type_url, &t) == 0) {
        xds_req_outcome oc;
        xds_ads_delta_request(&f->delta, req, t, last_nonce ? f->nonce : NULL, f->now, &oc);
    }
    envoy__service__discovery__v3__delta_discovery_request__free_unpacked(req, NULL);
}

static void on_control(fz *f, const uint8_t *p, size_t n, bool last_nonce)
{
    Gateway__Control__V1__DiscoveryRequest *req =
        gateway__control__v1__discovery_request__unpack(NULL, n, p);
    if (req == NULL)
        return;
    unsigned mask = XDS_CTL_ALL;
    sx_err err;
    sx_err_clear(&err);
    if (xds_ctl_parse_subscriptions(req->subscriptions, req->n_subscriptions, &mask, &err) == 0) {
        if (req->status_report) {
            sx_err e2;
            sx_err_clear(&e2);
            (void)xds_ctl_check_report(req->status_report, 1767225600000LL, &e2);
        }
        bool nack =
            req->result_status ==
                GATEWAY__CONTROL__V1__DISCOVERY_RESULT_STATUS__DISCOVERY_RESULT_STATUS_NACK ||
            (req->error_detail && req->error_detail[0]);
        xds_ctl_request r = {
            .nonce = last_nonce ? f->nonce : req->nonce,
            .is_nack = nack,
            .has_subscriptions = req->n_subscriptions > 0,
            .mask = mask,
        };
        xds_req_outcome oc;
        xds_ctl_on_request(&f->ctl, &r, f->now, &oc);
    } else if (err.message[0] == '\0') {
        abort(); /* a refusal says why */
    }
    gateway__control__v1__discovery_request__free_unpacked(req, NULL);
}

static void publish(fz *f, uint8_t which)
{
    f->version++;
    if (f->proto == P_CONTROL) {
        (void)xds_ctl_on_snapshot(&f->ctl, f->version, f->now);
        return;
    }
    tr_resources *r = fx_res(f->version, SNAPSHOTS[which % NSNAPSHOTS]);
    (void)xds_state_adopt(f->proto == P_SOTW ? &f->sotw.st : &f->delta.st, r, f->now);
    tr_resources_unref(r);
}

static void drain(fz *f)
{
    for (int i = 0; i < 16; i++) {
        f->now++;
        if (f->proto == P_CONTROL) {
            xds_ctl_response r;
            if (!xds_ctl_next(&f->ctl, f->now, &r))
                return;
            if (r.mask & ~XDS_CTL_ALL)
                abort();
            memcpy(f->nonce, r.nonce, sizeof(f->nonce));
            continue;
        }
        xds_response r;
        bool got = f->proto == P_SOTW ? xds_sotw_next(&f->sotw, f->now, &r)
                                      : xds_delta_next(&f->delta, f->now, &r);
        if (!got)
            return;
        check_response(&r);
        memcpy(f->nonce, r.nonce, sizeof(f->nonce));
        xds_response_clear(&r);
    }
}

static void report(const uint8_t *p, size_t n)
{
    Gateway__Control__V1__DataplaneStatusReport *r =
        gateway__control__v1__dataplane_status_report__unpack(NULL, n, p);
    if (r == NULL)
        return;
    sx_err err;
    sx_err_clear(&err);
    if (xds_ctl_check_report(r, 1767225600000LL, &err) != 0 && err.message[0] == '\0')
        abort();
    gateway__control__v1__dataplane_status_report__free_unpacked(r, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    fz f;
    memset(&f, 0, sizeof(f));
    f.proto = data[0] % 3;
    f.pool = (data[0] & 0x10) ? xds_names_create() : NULL;
    f.now = 1000;
    if (f.proto == P_SOTW)
        xds_state_init(&f.sotw.st, 42, f.pool);
    else if (f.proto == P_DELTA)
        xds_state_init(&f.delta.st, 42, f.pool);
    else
        xds_ctl_init(&f.ctl, 42);
    size_t at = 1;
    while (at + 2 <= size) {
        uint8_t op = data[at];
        size_t len = data[at + 1];
        at += 2;
        if (len > size - at)
            len = size - at;
        const uint8_t *p = data + at;
        at += len;
        switch (op % 5) {
        case 0:
            f.now += 5;
            if (f.proto == P_SOTW)
                on_sotw(&f, p, len, op & 0x80);
            else if (f.proto == P_DELTA)
                on_delta(&f, p, len, op & 0x80);
            else
                on_control(&f, p, len, op & 0x80);
            break;
        case 1:
            publish(&f, len ? p[0] : 0);
            break;
        case 2:
            drain(&f);
            break;
        case 3:
            f.now += (len ? p[0] : 1) * 1000;
            break;
        default:
            report(p, len);
            break;
        }
    }
    if (f.proto == P_SOTW)
        xds_sotw_free(&f.sotw);
    else if (f.proto == P_DELTA)
        xds_delta_free(&f.delta);
    if (f.pool) {
        if (xds_names_count(f.pool) != 0)
            abort(); /* a name interned by the stream was never released */
        xds_names_destroy(f.pool);
    }
    return 0;
}
