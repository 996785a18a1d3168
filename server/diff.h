/*
 * diff.h — the structured difference between two JSON documents (two versions of a
 * config's spec), as the REST API's /configs/{id}/diff returns it.
 *
 * The result lists every path that was added, removed or changed, with the values:
 *
 *   {"added":   [{"path": "spec.listeners[\"edge\"]", "value": {...}}],
 *    "removed": [{"path": "spec.backends[\"old\"]",   "value": {...}}],
 *    "changed": [{"path": "spec.listeners[\"web\"].port", "old": 80, "new": 8080}]}
 *
 * Objects are compared key by key. Arrays whose elements are all objects with a
 * distinct string "name" in both versions (listeners, routes, backends, secrets, rules)
 * are matched by that name, so inserting one element does not show every later one as
 * changed; their paths say ["name"]. Other arrays are compared index by index ([i]),
 * with trailing extra elements added or removed. Two values of different JSON types
 * are one change of the whole value. A path is the root, then ".key" for keys that are
 * identifiers ([A-Za-z_][A-Za-z0-9_]*) and ["key"] for any other key. Entries come in
 * document order: keys sorted, array elements in the new version's order.
 */
#ifndef SX_SERVER_DIFF_H
#define SX_SERVER_DIFF_H

#include <stddef.h>
#include <jansson.h>

/* Differences from `from` to `to` (neither NULL), with paths starting at root (NULL or
 * "" for none: then a top-level key is "key", not ".key"). Returns a new object
 * {"added":[...],"removed":[...],"changed":[...]} owned by the caller; never NULL. Equal
 * documents give three empty arrays. */
json_t *diff_json(const json_t *from, const json_t *to, const char *root);

/* The number of entries of the three lists of a diff_json result. */
size_t diff_count(const json_t *diff);

#endif
