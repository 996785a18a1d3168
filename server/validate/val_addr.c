/*
 * val_addr.c — listener addresses for the semantic and conflict stages: which
 * addresses a listener binds, whether two of them can take the same socket, and how
 * to print one with its port.
 *
 * Two addresses overlap when they are the same IP (compared in canonical form, so
 * "::0" is "::") or when either is a wildcard ("", 0.0.0.0 or ::): a socket bound to
 * the wildcard takes the port on every address.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "server/validate/val_internal.h"

/* The canonical text of an IP literal, or a copy of a when it is not one. */
static void canonical(const char *a, char *buf, size_t n)
{
    unsigned char raw[sizeof(struct in6_addr)];
    if (inet_pton(AF_INET, a, raw) == 1)
        inet_ntop(AF_INET, raw, buf, (socklen_t)n);
    else if (inet_pton(AF_INET6, a, raw) == 1)
        inet_ntop(AF_INET6, raw, buf, (socklen_t)n);
    else
        snprintf(buf, n, "%s", a);
}

static bool wildcard(const char *canon)
{
    return canon[0] == '\0' || strcmp(canon, "0.0.0.0") == 0 || strcmp(canon, "::") == 0;
}

bool val_addrs_overlap(const char *a, const char *b)
{
    char x[INET6_ADDRSTRLEN + 64], y[INET6_ADDRSTRLEN + 64];
    canonical(VAL_S(a), x, sizeof x);
    canonical(VAL_S(b), y, sizeof y);
    return wildcard(x) || wildcard(y) || strcmp(x, y) == 0;
}

const char *val_addr_port(const char *addr, unsigned port, char *buf, size_t n)
{
    const char *a = addr && addr[0] ? addr : "0.0.0.0";
    if (strchr(a, ':'))
        snprintf(buf, n, "[%s]:%u", a, port);
    else
        snprintf(buf, n, "%s:%u", a, port);
    return buf;
}

const char *val_listener_addr(const val_listener *l, size_t k, char *field, size_t n)
{
    if (k == 0) {
        snprintf(field, n, "address");
        return VAL_S(l->address);
    }
    if (k - 1 >= l->n_addresses)
        return NULL;
    snprintf(field, n, "addresses[%zu]", k - 1);
    return VAL_S(l->addresses[k - 1]);
}

/* Whether l listens on UDP (HTTP/3 over QUIC, a UDP stream proxy) rather than TCP. */
static bool udp(const val_listener *l)
{
    return l->protocol == GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_HTTP3 ||
           l->protocol == GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_UDP;
}

const char *val_sockets_clash(const val_listener *a, const val_listener *b)
{
    char fx[32], fy[32];
    if (a == NULL || b == NULL || a->port == 0 || a->port != b->port)
        return NULL;
    if (udp(a) != udp(b))
        return NULL; /* a UDP and a TCP socket share a port without a clash */
    for (size_t x = 0;; x++) {
        const char *ax = val_listener_addr(a, x, fx, sizeof fx);
        if (ax == NULL)
            return NULL;
        for (size_t y = 0;; y++) {
            const char *by = val_listener_addr(b, y, fy, sizeof fy);
            if (by == NULL)
                break;
            if (val_addrs_overlap(ax, by))
                return ax;
        }
    }
}
