/*
 * list.h — intrusive doubly linked lists: an object that sits on a list embeds an
 * sx_link, and the list is an sx_list of its first and last links. Linking and
 * unlinking allocate nothing and take constant time; SX_CONTAINER gets the object
 * back from its link. A zeroed sx_list is empty; a link is on at most one list at a
 * time, and whoever owns the list serialises its changes.
 */
#ifndef SX_BASE_LIST_H
#define SX_BASE_LIST_H

#include <stddef.h>

typedef struct sx_link {
    struct sx_link *prev, *next;
} sx_link;

typedef struct sx_list {
    sx_link *head, *tail;
} sx_list;

/* The object of type type whose member member is the link l (not NULL). */
#define SX_CONTAINER(l, type, member) ((type *)(void *)((char *)(l)-offsetof(type, member)))

/* Puts n, which is on no list, first on l. */
static inline void sx_list_push_front(sx_list *l, sx_link *n)
{
    n->prev = NULL;
    n->next = l->head;
    if (l->head)
        l->head->prev = n;
    else
        l->tail = n;
    l->head = n;
}

/* Takes n off l, which it is on. */
static inline void sx_list_remove(sx_list *l, sx_link *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        l->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        l->tail = n->prev;
    n->prev = n->next = NULL;
}

#endif
