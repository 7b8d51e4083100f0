/* The version table every chapter keeps: one row type, and what is derived from the rows
 * (the names --kernel accepts and --help lists, a row found by its name).
 *
 * A row is the name --kernel takes, its role in the results (naive | step | optimized |
 * ceiling, as in the CSV), how to run it, and, where a chapter needs to know more about a
 * version (the shared memory it asks for, whether it needs Hopper), an Extra of the
 * chapter's own:
 *
 *     static const Version<VectorAddLauncher> VERSIONS[] = {
 *         {"naive", "naive", launch_naive}, ...};
 *     static const Version<SgemmLauncher, SgemmNeeds> SGEMM_VERSIONS[] = {
 *         {"hopper", "optimized", sgemm_hopper, {149 * 1024}}, ...};
 *
 * The launcher's type is the chapter's (every chapter runs its versions differently), so
 * the row is a template on it; everything else is the same in every chapter. */
#ifndef COMMON_VERSIONS_H
#define COMMON_VERSIONS_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct NoExtra {
};

template <typename Launch, typename Extra = NoExtra> struct Version {
    const char *name;
    const char *role;
    Launch launch;
    Extra extra;
};

/* A row with nothing beside the launcher: three fields, so that `{name, role, launch}`
 * initializes all of it. */
template <typename Launch> struct Version<Launch, NoExtra> {
    const char *name;
    const char *role;
    Launch launch;
};

#define VERSION_COUNT(table) (int)(sizeof(table) / sizeof((table)[0]))

/* The names of every table of a chapter, in table order, NULL-terminated: what cli.h's
 * ProgramSpec.kernels points at. Filled by name_list_add before the command line is read. */
#define NAME_LIST_MAX 96
typedef struct {
    const char *name[NAME_LIST_MAX + 1];
    int n;
} NameList;

/* Appends one name (a version that is no row of a table, such as a sweep). */
static inline void name_list_append(NameList *list, const char *name)
{
    if (list->n == NAME_LIST_MAX) {
        fprintf(stderr, "name_list_append: more than %d versions; raise NAME_LIST_MAX\n",
                NAME_LIST_MAX);
        exit(1);
    }
    list->name[list->n++] = name;
    list->name[list->n] = NULL;
}

/* Appends the n names of rows (any table whose rows have a `name`). */
template <typename Row> static void name_list_add(NameList *list, const Row *rows, int n)
{
    for (int i = 0; i < n; i++) name_list_append(list, rows[i].name);
}

/* Whether `name` is one of the list's. */
static inline int name_list_has(const NameList *list, const char *name)
{
    for (int i = 0; i < list->n; i++)
        if (strcmp(list->name[i], name) == 0) return 1;
    return 0;
}

/* The index of the row named `name` in rows[0..n), or -1. */
template <typename Row> static int version_index(const Row *rows, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].name, name) == 0) return i;
    return -1;
}

#endif
