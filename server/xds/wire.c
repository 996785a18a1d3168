/*
 * wire.c — shared encoded snapshots and zero-copy response assembly (see wire.h).
 *
 * Responses are hand-assembled from protobuf wire format: a header slice with the
 * scalar fields (version, type URL, nonce, control plane) followed by the pre-encoded
 * repeated entries as sub-slices of one refcounted slice per type. Adjacent entries
 * become one sub-slice, so the slice count stays small even for large responses.
 * protobuf-c is used only for the small messages (StatusAck) and by the tests that
 * decode what is assembled here.
 */
#include "server/xds/wire.h"

#include <grpc/byte_buffer_reader.h>
#include <stdio.h>
#include <string.h>

#include "server/base/mem.h"
#include "server/xds/control.h"

/* Tags (field << 3 | wire type 2) of the fields written here. */
#define TAG_ANY_TYPE_URL   0x0a /* Any.type_url = 1 */
#define TAG_ANY_VALUE      0x12 /* Any.value = 2 */
#define TAG_RESP_VERSION   0x0a /* DiscoveryResponse.version_info = 1 */
#define TAG_RESP_RESOURCES 0x12 /* DiscoveryResponse.resources = 2 (also Delta) */
#define TAG_RESP_TYPE_URL  0x22 /* DiscoveryResponse.type_url = 4 (also Delta) */
#define TAG_RESP_NONCE     0x2a /* DiscoveryResponse.nonce = 5 (also Delta) */
#define TAG_RESP_CP        0x32 /* DiscoveryResponse.control_plane = 6 */
#define TAG_DELTA_REMOVED  0x32 /* DeltaDiscoveryResponse.removed_resources = 6 */
#define TAG_DELTA_CP       0x3a /* DeltaDiscoveryResponse.control_plane = 7 */
#define TAG_CP_IDENTIFIER  0x0a /* ControlPlane.identifier = 1 */
#define TAG_RES_VERSION    0x0a /* Resource.version = 1 */
#define TAG_RES_RESOURCE   0x12 /* Resource.resource = 2 */
#define TAG_RES_NAME       0x1a /* Resource.name = 3 */
#define TAG_CTL_VERSION    0x0a /* control.v1 DiscoveryResponse.version = 1 */
#define TAG_CTL_NONCE      0x12 /* .nonce = 2 */
#define TAG_CTL_SNAPSHOT   0x1a /* .snapshot = 3 */

/* ------------------------------------------------------------------ wire format */

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Bytes of a length-delimited field with a one-byte tag and payload bytes. */
static size_t field_len(size_t payload)
{
    return 1 + varint_len(payload) + payload;
}

static uint8_t *put_field(uint8_t *p, uint8_t tag, const void *data, size_t len)
{
    *p++ = tag;
    p = put_varint(p, len);
    if (len)
        memcpy(p, data, len);
    return p + len;
}

static uint8_t *put_field_header(uint8_t *p, uint8_t tag, size_t len)
{
    *p++ = tag;
    return put_varint(p, len);
}

static bool get_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64 && *pos < len; shift += 7) {
        uint8_t b = p[(*pos)++];
        r |= (uint64_t)(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            *v = r;
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------ entries */

static size_t any_len(size_t url_len, size_t value_len)
{
    return field_len(url_len) + field_len(value_len);
}

static uint8_t *put_any(uint8_t *p, const char *url, size_t url_len, const tr_resource *r)
{
    p = put_field(p, TAG_ANY_TYPE_URL, url, url_len);
    return put_field(p, TAG_ANY_VALUE, r->bytes, r->len);
}

static void build_entries(xds_wire_entries *e, const tr_resources *res, tr_type t, bool delta)
{
    size_t n = res->count[t];
    const char *url = tr_type_url(t);
    size_t ulen = strlen(url);
    e->off = sx_malloc((n + 1) * sizeof(size_t));
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const tr_resource *r = &res->items[t][i];
        size_t any = any_len(ulen, r->len);
        size_t entry;
        if (delta)
            entry = field_len(field_len(strlen(r->version)) + field_len(any) +
                              field_len(strlen(r->name)));
        else
            entry = field_len(any);
        e->off[i] = total;
        total += entry;
    }
    e->off[n] = total;
    if (total == 0) {
        e->all = grpc_empty_slice();
        return;
    }
    uint8_t *buf = sx_malloc(total), *p = buf;
    for (size_t i = 0; i < n; i++) {
        const tr_resource *r = &res->items[t][i];
        size_t any = any_len(ulen, r->len);
        if (delta) {
            size_t vlen = strlen(r->version), nlen = strlen(r->name);
            p = put_field_header(p, TAG_RESP_RESOURCES,
                                 field_len(vlen) + field_len(any) + field_len(nlen));
            p = put_field(p, TAG_RES_VERSION, r->version, vlen);
            p = put_field_header(p, TAG_RES_RESOURCE, any);
            p = put_any(p, url, ulen, r);
            p = put_field(p, TAG_RES_NAME, r->name, nlen);
        } else {
            p = put_field_header(p, TAG_RESP_RESOURCES, any);
            p = put_any(p, url, ulen, r);
        }
    }
    e->all = grpc_slice_new(buf, total, sx_free);
}

static void free_entries(xds_wire_entries *e)
{
    if (e->off == NULL)
        return;
    grpc_slice_unref(e->all);
    sx_free(e->off);
    e->off = NULL;
}

/* Appends sub-slices of e for the ascending indices idx, one per run of adjacent
 * entries; returns the new slice count. The sub-slices take no reference: the byte
 * buffer they are handed to takes its own. */
static size_t add_runs(grpc_slice *slices, size_t k, const xds_wire_entries *e, const uint32_t *idx,
                       size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j + 1 < n && idx[j + 1] == idx[j] + 1)
            j++;
        size_t a = e->off[idx[i]], b = e->off[idx[j] + 1];
        if (b > a)
            slices[k++] = grpc_slice_sub_no_ref(e->all, a, b);
        i = j + 1;
    }
    return k;
}

/* Hands header + slices to a new byte buffer and drops the header's reference. */
static grpc_byte_buffer *finish(grpc_slice *slices, size_t k)
{
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(slices, k);
    grpc_slice_unref(slices[0]);
    return bb;
}

/* ------------------------------------------------------------------ wire_res */

xds_wire_res *xds_wire_res_create(tr_resources *res)
{
    xds_wire_res *w = sx_calloc(1, sizeof(*w));
    atomic_init(&w->refs, 1);
    w->res = tr_resources_ref(res);
    pthread_mutex_init(&w->delta_mu, NULL);
    atomic_init(&w->delta_built, false);
    for (int t = 0; t < TR_TYPE_COUNT; t++)
        build_entries(&w->sotw[t], res, (tr_type)t, false);
    return w;
}

xds_wire_res *xds_wire_res_ref(xds_wire_res *w)
{
    atomic_fetch_add(&w->refs, 1);
    return w;
}

void xds_wire_res_unref(xds_wire_res *w)
{
    if (w == NULL || atomic_fetch_sub(&w->refs, 1) != 1)
        return;
    for (int t = 0; t < TR_TYPE_COUNT; t++) {
        free_entries(&w->sotw[t]);
        free_entries(&w->delta[t]);
    }
    pthread_mutex_destroy(&w->delta_mu);
    tr_resources_unref(w->res);
    sx_free(w);
}

static void build_delta(xds_wire_res *w)
{
    if (atomic_load(&w->delta_built))
        return;
    pthread_mutex_lock(&w->delta_mu);
    if (!atomic_load(&w->delta_built)) {
        for (int t = 0; t < TR_TYPE_COUNT; t++)
            build_entries(&w->delta[t], w->res, (tr_type)t, true);
        atomic_store(&w->delta_built, true);
    }
    pthread_mutex_unlock(&w->delta_mu);
}

/* ------------------------------------------------------------------ wire_snap */

static void entry_release(void *p)
{
    snap_entry_unref(p);
}

/* Records the top-level fields of an encoded message; bytes that do not parse go
 * into one last span with field 0, which is always sent. */
static void scan_fields(xds_wire_snap *s, const uint8_t *p, size_t len)
{
    size_t cap = 0, pos = 0;
    while (pos < len) {
        size_t start = pos;
        uint64_t tag = 0, v = 0;
        bool ok = get_varint(p, len, &pos, &tag);
        if (ok) {
            switch (tag & 7) {
            case 0:
                ok = get_varint(p, len, &pos, &v);
                break;
            case 1:
                ok = len - pos >= 8;
                pos += ok ? 8 : 0;
                break;
            case 2:
                ok = get_varint(p, len, &pos, &v) && v <= len - pos;
                pos += ok ? v : 0;
                break;
            case 5:
                ok = len - pos >= 4;
                pos += ok ? 4 : 0;
                break;
            default:
                ok = false;
            }
        }
        uint64_t field = tag >> 3;
        if (!ok || field == 0 || field > UINT32_MAX) {
            field = 0;
            pos = len;
        }
        xds_wire_span *last = s->nspans ? &s->spans[s->nspans - 1] : NULL;
        if (last && last->field == field && last->off + last->len == start) {
            last->len += pos - start;
            continue;
        }
        if (s->nspans == cap) {
            cap = cap ? cap * 2 : 16;
            s->spans = sx_realloc(s->spans, cap * sizeof(*s->spans));
        }
        s->spans[s->nspans++] = (xds_wire_span){(uint32_t)field, start, pos - start};
    }
}

xds_wire_snap *xds_wire_snap_create(snap_entry *entry, xds_wire_res *wire, int64_t published_ms)
{
    xds_wire_snap *s = sx_calloc(1, sizeof(*s));
    atomic_init(&s->refs, 1);
    s->entry = snap_entry_ref(entry);
    s->wire = wire ? xds_wire_res_ref(wire) : NULL;
    s->published_ms = published_ms;
    if (entry->encoded_len > 0)
        s->ir = grpc_slice_new_with_user_data(entry->encoded, entry->encoded_len, entry_release,
                                              snap_entry_ref(entry));
    else
        s->ir = grpc_empty_slice();
    scan_fields(s, entry->encoded, entry->encoded_len);
    return s;
}

xds_wire_snap *xds_wire_snap_ref(xds_wire_snap *s)
{
    atomic_fetch_add(&s->refs, 1);
    return s;
}

void xds_wire_snap_unref(xds_wire_snap *s)
{
    if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    grpc_slice_unref(s->ir);
    sx_free(s->spans);
    xds_wire_res_unref(s->wire);
    snap_entry_unref(s->entry);
    sx_free(s);
}

/* ------------------------------------------------------------------ responses */

static size_t cp_len(const char *control_plane)
{
    return control_plane && *control_plane ? field_len(field_len(strlen(control_plane))) : 0;
}

static uint8_t *put_cp(uint8_t *p, uint8_t tag, const char *control_plane)
{
    if (control_plane == NULL || *control_plane == '\0')
        return p;
    size_t n = strlen(control_plane);
    p = put_field_header(p, tag, field_len(n));
    return put_field(p, TAG_CP_IDENTIFIER, control_plane, n);
}

grpc_byte_buffer *xds_wire_sotw_response(const xds_wire_res *w, tr_type t, long long version,
                                         const char *nonce, const uint32_t *idx, size_t n,
                                         const char *control_plane)
{
    return xds_wire_sotw_response_kept(w, t, version, nonce, idx, n, NULL, 0, control_plane);
}

grpc_byte_buffer *xds_wire_sotw_response_kept(const xds_wire_res *w, tr_type t, long long version,
                                              const char *nonce, const uint32_t *idx, size_t n,
                                              const tr_resource *kept, size_t nkept,
                                              const char *control_plane)
{
    char ver[24];
    snprintf(ver, sizeof(ver), "%lld", version);
    const char *url = tr_type_url(t);
    size_t vlen = strlen(ver), ulen = strlen(url), nlen = strlen(nonce);
    size_t hlen = field_len(vlen) + field_len(ulen) + field_len(nlen) + cp_len(control_plane);
    grpc_slice *slices = sx_malloc((n + 2) * sizeof(grpc_slice));
    slices[0] = grpc_slice_malloc(hlen);
    uint8_t *p = GRPC_SLICE_START_PTR(slices[0]);
    p = put_field(p, TAG_RESP_VERSION, ver, vlen);
    p = put_field(p, TAG_RESP_TYPE_URL, url, ulen);
    p = put_field(p, TAG_RESP_NONCE, nonce, nlen);
    put_cp(p, TAG_RESP_CP, control_plane);
    size_t k = add_runs(slices, 1, &w->sotw[t], idx, n);
    /* Resources no longer in the snapshot that the response still carries (rare and
     * few: encoded here rather than kept encoded). */
    size_t klen = 0;
    for (size_t i = 0; i < nkept; i++)
        klen += field_len(any_len(ulen, kept[i].len));
    grpc_slice ks = grpc_empty_slice();
    if (klen > 0) {
        ks = grpc_slice_malloc(klen);
        uint8_t *q = GRPC_SLICE_START_PTR(ks);
        for (size_t i = 0; i < nkept; i++) {
            q = put_field_header(q, TAG_RESP_RESOURCES, any_len(ulen, kept[i].len));
            q = put_any(q, url, ulen, &kept[i]);
        }
        slices[k++] = ks;
    }
    grpc_byte_buffer *bb = finish(slices, k);
    grpc_slice_unref(ks); /* the buffer holds its own reference */
    sx_free(slices);
    return bb;
}

grpc_byte_buffer *xds_wire_delta_response(xds_wire_res *w, tr_type t, long long version,
                                          const char *nonce, const uint32_t *idx, size_t n,
                                          char *const *removed, size_t nremoved,
                                          const char *control_plane)
{
    if (n > 0)
        build_delta(w);
    char ver[24];
    snprintf(ver, sizeof(ver), "%lld", version);
    const char *url = tr_type_url(t);
    size_t vlen = strlen(ver), ulen = strlen(url), nlen = strlen(nonce);
    size_t hlen = field_len(vlen) + field_len(ulen) + field_len(nlen) + cp_len(control_plane);
    for (size_t i = 0; i < nremoved; i++)
        hlen += field_len(strlen(removed[i]));
    grpc_slice *slices = sx_malloc((n + 1) * sizeof(grpc_slice));
    slices[0] = grpc_slice_malloc(hlen);
    uint8_t *p = GRPC_SLICE_START_PTR(slices[0]);
    p = put_field(p, TAG_RESP_VERSION, ver, vlen);
    p = put_field(p, TAG_RESP_TYPE_URL, url, ulen);
    p = put_field(p, TAG_RESP_NONCE, nonce, nlen);
    for (size_t i = 0; i < nremoved; i++)
        p = put_field(p, TAG_DELTA_REMOVED, removed[i], strlen(removed[i]));
    put_cp(p, TAG_DELTA_CP, control_plane);
    size_t k = n > 0 ? add_runs(slices, 1, &w->delta[t], idx, n) : 1;
    grpc_byte_buffer *bb = finish(slices, k);
    sx_free(slices);
    return bb;
}

static bool part_wanted(uint32_t field, unsigned mask)
{
    if (field < XDS_CTL_FIRST_FIELD || field >= XDS_CTL_FIRST_FIELD + XDS_CTL_PARTS)
        return true; /* id, generated_at, and anything this build does not know */
    return (mask >> (field - XDS_CTL_FIRST_FIELD)) & 1;
}

grpc_byte_buffer *xds_wire_control_response(const xds_wire_snap *s, const char *nonce,
                                            unsigned mask)
{
    char ver[24];
    snprintf(ver, sizeof(ver), "%lld", s->entry->version);
    size_t vlen = strlen(ver), nlen = strlen(nonce);
    bool all = (mask & XDS_CTL_ALL) == XDS_CTL_ALL;

    /* Runs of wanted spans, merged when adjacent. */
    size_t cap = all ? 1 : s->nspans;
    size_t *run_off = sx_malloc((cap + 1) * sizeof(size_t));
    size_t *run_len = sx_malloc((cap + 1) * sizeof(size_t));
    size_t nruns = 0, total = 0;
    if (all) {
        if (GRPC_SLICE_LENGTH(s->ir) > 0) {
            run_off[0] = 0;
            run_len[0] = GRPC_SLICE_LENGTH(s->ir);
            nruns = 1;
        }
    } else {
        for (size_t i = 0; i < s->nspans; i++) {
            if (!part_wanted(s->spans[i].field, mask))
                continue;
            if (nruns && run_off[nruns - 1] + run_len[nruns - 1] == s->spans[i].off) {
                run_len[nruns - 1] += s->spans[i].len;
            } else {
                run_off[nruns] = s->spans[i].off;
                run_len[nruns++] = s->spans[i].len;
            }
        }
    }
    for (size_t i = 0; i < nruns; i++)
        total += run_len[i];

    size_t hlen = field_len(vlen) + field_len(nlen) + 1 + varint_len(total);
    grpc_slice *slices = sx_malloc((nruns + 1) * sizeof(grpc_slice));
    slices[0] = grpc_slice_malloc(hlen);
    uint8_t *p = GRPC_SLICE_START_PTR(slices[0]);
    p = put_field(p, TAG_CTL_VERSION, ver, vlen);
    p = put_field(p, TAG_CTL_NONCE, nonce, nlen);
    put_field_header(p, TAG_CTL_SNAPSHOT, total);
    for (size_t i = 0; i < nruns; i++)
        slices[1 + i] = grpc_slice_sub_no_ref(s->ir, run_off[i], run_off[i] + run_len[i]);
    grpc_byte_buffer *bb = finish(slices, nruns + 1);
    sx_free(slices);
    sx_free(run_off);
    sx_free(run_len);
    return bb;
}

grpc_byte_buffer *xds_wire_pack(const ProtobufCMessage *m)
{
    size_t len = protobuf_c_message_get_packed_size(m);
    grpc_slice s = grpc_slice_malloc(len);
    protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(s));
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    return bb;
}

bool xds_wire_read(grpc_byte_buffer *bb, grpc_slice *out)
{
    grpc_byte_buffer_reader r;
    if (!grpc_byte_buffer_reader_init(&r, bb))
        return false;
    *out = grpc_byte_buffer_reader_readall(&r);
    grpc_byte_buffer_reader_destroy(&r);
    return true;
}
