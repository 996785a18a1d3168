/*
 * db_fixture.h — an empty database (no migrations applied) for the storage tests:
 * db_setup makes it and sets db_url, db_teardown drops it; a cmocka fixture for each
 * test or for the whole group.
 */
#ifndef SX_TESTS_DB_FIXTURE_H
#define SX_TESTS_DB_FIXTURE_H

#include "tests/lib/testlib.h"

static char *db_url;

static int db_setup(void **state)
{
    (void)state;
    db_url = tl_db_create();
    return 0;
}

static int db_teardown(void **state)
{
    (void)state;
    tl_db_drop(db_url);
    return 0;
}

/* DB_TEST(name) { body }: a test run on a database of its own. */
#define DB_TEST(name) TL_TEST_WITH(name, db_setup, db_teardown)

#endif
