/*
 * sorted.h — binary search in an array of records sorted by a string field.
 */
#ifndef SX_BASE_SORTED_H
#define SX_BASE_SORTED_H

#include <stddef.h>

/* The index of the first of the n records at base (size bytes apart, sorted by strcmp on
 * the const char * at byte offset in each) whose string is not less than key; n when
 * there is none. Pass the offset with offsetof. */
size_t sx_sorted_first(const void *base, size_t n, size_t size, size_t offset, const char *key);

#endif
