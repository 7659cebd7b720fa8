/* panel.h — a scrollable list of Lines with an optional cursor (htop's
 * Panel).  Base struct + const class table; _new/_delete pair.
 *
 * A Panel owns its Lines and title.  It draws through crt.h only.  The
 * selection survives content changes: set_lines keeps the cursor on the
 * line with the same (frame_id, compile_id) when there is one.
 */
#ifndef TUI_PANEL_H
#define TUI_PANEL_H

#include <stddef.h>

#include "crt.h"
#include "util.h"

typedef struct Panel Panel;

typedef struct PanelClass {
    const char *name;
    int selectable;             /* 1: rows have a cursor; 0: text that only scrolls */
    const char *empty_text;     /* shown when there are no lines */
} PanelClass;

extern const PanelClass panel_class_table;   /* the frame table / tree */
extern const PanelClass panel_class_text;    /* a detail tab */

struct Panel {
    const PanelClass *klass;    /* borrowed, static */
    Lines lines;                /* owned */
    char *title;                /* owned; column titles, "" for none */
    size_t selected;            /* cursor line (selectable panels) */
    size_t scroll;              /* first visible line */
    size_t hscroll;             /* columns scrolled to the right */
    int height;                 /* rows of lines at the last draw (for paging) */
};

Panel *panel_new(const PanelClass *klass);
void panel_delete(Panel *p);    /* NULL accepted */

/* Takes the content of `*lines` (left empty) and the title (copied). */
void panel_set_lines(Panel *p, Lines *lines, const char *title);

/* Moves the cursor / scrolls for navigation keys.  1 if the key was used. */
int panel_on_key(Panel *p, Key key);

/* The line under the cursor, or NULL. */
const Line *panel_current(const Panel *p);

/* Puts the cursor on the first line referring to (frame_id, compile_id). */
void panel_select(Panel *p, int64_t frame_id, int64_t compile_id);

/* Searches case-insensitively for `text` starting at the cursor (`skip`:
 * from the line after it), wrapping around; moves there.  1 if found. */
int panel_find(Panel *p, const char *text, int skip);

/* Draws title (if any) and lines into the rectangle. */
void panel_draw(Panel *p, int y, int x, int height, int width, int focused);

#endif
