/* render.h — Models as lines of text: the header, the frame table, the
 * tree, and the six detail tabs.
 *
 * One implementation for both outputs: the interactive view draws these
 * Lines through the panels, the --once report prints them.  No curses here
 * (colors are plain Color tags), no reader.
 */
#ifndef TUI_RENDER_H
#define TUI_RENDER_H

#include "model.h"
#include "util.h"

typedef enum SortKey {
    SORT_FUNCTION = 0, SORT_FILE, SORT_CALLS, SORT_HIT, SORT_ENTRIES,
    SORT_RECOMPILES, SORT_BREAKS, SORT_COMPILE, SORT_STATUS, SORT_COUNT
} SortKey;

/* How the frame table / tree is shown. */
typedef struct TableOpts {
    SortKey sort;
    int ascending;          /* 0: largest first (names: Z..A) */
    const char *filter;     /* case-insensitive substring of function or file; NULL/"" none */
    int utf8;               /* box drawing and arrows allowed */
    int width;              /* columns available */
} TableOpts;

const char *sort_key_name(SortKey k);

/* "dynamo-top  pid ...  [LIVE]" and the totals line; the interactive view
 * draws the state as a colored badge instead (show_state 0). */
void render_header(Lines *out, const Model *m, ProcState st, int show_state);
const char *proc_state_label(ProcState st);

/* The column titles of the frame table (sort column marked). */
char *render_table_title(const TableOpts *o);
/* One line per frame passing the filter, sorted; Line.frame_id set. */
void render_frames(Lines *out, const Model *m, const TableOpts *o);
/* Frames with their entries [F/C], graphs and resume functions below
 * them; entry lines carry compile_id. */
void render_tree(Lines *out, const Model *m, const TableOpts *o);

typedef enum Tab {
    TAB_GRAPH = 0, TAB_BYTECODE, TAB_GUARDS, TAB_BREAKS, TAB_RECOMPILES, TAB_EVENTS, TAB_COUNT
} Tab;

/* A detail tab: a name and how to render it for one frame (or, with
 * compile_id >= 0, for one of its entries).  htop-style class table. */
typedef struct TabClass {
    const char *name;
    void (*render)(Lines *out, const Model *m, const MFrame *f, int64_t compile_id, int width);
} TabClass;

extern const TabClass tab_classes[TAB_COUNT];

/* The guard cost of frame `f`: ns per lookup (sampled) and its costliest
 * guard-tree nodes, or why there is none (the Guards tab's head). */
void render_guard_cost(Lines *out, const Model *m, const MFrame *f);

/* The Events tab's lines, newest first; with `only_f`, only `f`'s events. */
void render_events(Lines *out, const Model *m, const MFrame *f, int only_f);
/* The tab whose name is `name` (case-insensitive: "guards"), or TAB_COUNT. */
Tab tab_by_name(const char *name);
/* Whether frame `f` passes the table filter of `o` (name, file, context). */
int render_frame_passes(const MFrame *f, const TableOpts *o);
/* " name [context]  file:line" of a frame, for one-line listings; caller frees. */
char *render_frame_label(const MFrame *f);

/* The `top` costliest graph breaks of every frame (estimated eager time
 * between graph and resume call, then compiles) as a titled table; returns
 * how many breaks the model has (0: nothing added). */
size_t render_costly_breaks(Lines *out, const Model *m, int top);

#endif
