/*
 * repo_list.h — the page a repository's list query returns: its items (in the order the
 * query names), their count, and the cursor of the next page (NULL on the last page),
 * all in the caller's arena. One layout for every list, so that storage fills any of
 * them from a repo_page (REPO_LIST_REF) and the REST API renders any of them
 * (API_PAGE_FILL).
 */
#ifndef SX_STORAGE_REPO_LIST_H
#define SX_STORAGE_REPO_LIST_H

#include <stddef.h>

/* typedef struct name { item_type *items; size_t count; char *next_cursor; } name; */
#define REPO_LIST(name, item_type)                                                                 \
    typedef struct name {                                                                          \
        item_type *items;                                                                          \
        size_t count;                                                                              \
        char *next_cursor;                                                                         \
    } name

#endif
