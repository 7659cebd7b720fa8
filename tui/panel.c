/* panel.c — scrollable, selectable lists of text (see panel.h).  Draws
 * through crt.h; knows nothing about models. */
#include "panel.h"

#include <stdlib.h>
#include <string.h>

const PanelClass panel_class_table = {"table", 1, "no frames compiled yet"};
const PanelClass panel_class_text = {"text", 0, ""};

Panel *panel_new(const PanelClass *klass)
{
    Panel *p = xcalloc(1, sizeof *p);
    p->klass = klass;
    lines_init(&p->lines);
    p->title = xstrdup("");
    return p;
}

void panel_delete(Panel *p)
{
    if (!p)
        return;
    lines_free(&p->lines);
    free(p->title);
    free(p);
}

static void clamp(Panel *p)
{
    size_t n = p->lines.n;
    size_t h = p->height > 0 ? (size_t)p->height : 1;
    if (p->selected >= n)
        p->selected = n ? n - 1 : 0;
    if (p->klass->selectable) {     /* keep the cursor visible */
        if (p->selected < p->scroll)
            p->scroll = p->selected;
        if (p->selected >= p->scroll + h)
            p->scroll = p->selected - h + 1;
    } else if (p->scroll + h > n) {
        p->scroll = n > h ? n - h : 0;
    }
}

void panel_set_lines(Panel *p, Lines *lines, const char *title)
{
    const Line *cur = panel_current(p);
    int64_t fid = cur ? cur->frame_id : -1, cid = cur ? cur->compile_id : -1;
    size_t old = p->selected;
    lines_free(&p->lines);
    p->lines = *lines;
    lines_init(lines);
    free(p->title);
    p->title = xstrdup(title);
    p->selected = old;
    if (p->klass->selectable && fid != -1)
        panel_select(p, fid, cid);
    clamp(p);
}

const Line *panel_current(const Panel *p)
{
    return p->selected < p->lines.n ? &p->lines.v[p->selected] : NULL;
}

void panel_select(Panel *p, int64_t frame_id, int64_t compile_id)
{
    size_t frame_line = (size_t)-1;
    for (size_t i = 0; i < p->lines.n; i++) {
        const Line *l = &p->lines.v[i];
        if (l->frame_id != frame_id)
            continue;
        if (l->compile_id == compile_id) {
            p->selected = i;
            clamp(p);
            return;
        }
        if (frame_line == (size_t)-1)
            frame_line = i;
    }
    if (frame_line != (size_t)-1)   /* entry gone: stay on its frame */
        p->selected = frame_line;
    clamp(p);
}

int panel_find(Panel *p, const char *text, int skip)
{
    size_t n = p->lines.n;
    size_t start = p->klass->selectable ? p->selected : p->scroll;
    for (size_t k = (size_t)(skip != 0); k < n + (size_t)(skip != 0); k++) {
        size_t i = (start + k) % n;
        if (str_contains_ci(p->lines.v[i].text, text)) {
            if (p->klass->selectable)
                p->selected = i;
            else
                p->scroll = i;
            clamp(p);
            return 1;
        }
    }
    return 0;
}

int panel_on_key(Panel *p, Key key)
{
    size_t page = p->height > 1 ? (size_t)p->height - 1 : 1;
    size_t *pos = p->klass->selectable ? &p->selected : &p->scroll;
    switch (key) {
    case K_UP: case 'k':
        if (*pos)
            (*pos)--;
        break;
    case K_DOWN: case 'j':
        (*pos)++;
        break;
    case K_PGUP:
        *pos = *pos > page ? *pos - page : 0;
        break;
    case K_PGDN:
        *pos += page;
        break;
    case K_HOME:
        *pos = 0;
        break;
    case K_END:
        *pos = p->lines.n ? p->lines.n - 1 : 0;
        break;
    case K_LEFT:
        p->hscroll = p->hscroll > 8 ? p->hscroll - 8 : 0;
        break;
    case K_RIGHT:
        p->hscroll += 8;
        break;
    default:
        return 0;
    }
    if (!p->klass->selectable && key == K_END)
        p->scroll = p->lines.n;     /* clamp shows the last page */
    clamp(p);
    return 1;
}

/* The text of a line after horizontal scrolling. */
static const char *shifted(const char *text, size_t cols)
{
    while (cols && *text) {
        text++;
        while (((unsigned char)*text & 0xC0) == 0x80)
            text++;
        cols--;
    }
    return text;
}

void panel_draw(Panel *p, int y, int x, int height, int width, int focused)
{
    if (height <= 0 || width <= 0)
        return;
    if (*p->title) {
        crt_text(y, x, width, C_TITLE, shifted(p->title, p->hscroll));
        y++;
        height--;
    }
    p->height = height;
    clamp(p);
    if (!p->lines.n && height > 0)
        crt_text(y, x, width, C_DIM, p->klass->empty_text);
    for (int r = 0; r < height; r++) {
        size_t i = p->scroll + (size_t)r;
        if (i >= p->lines.n) {
            if (r || p->lines.n)
                crt_text(y + r, x, width, C_DEFAULT, "");
            continue;
        }
        const Line *l = &p->lines.v[i];
        Color c = l->color;
        if (p->klass->selectable && i == p->selected)
            c = focused ? C_SELECTED : C_TITLE;
        crt_text(y + r, x, width, c, shifted(l->text, p->hscroll));
    }
}
