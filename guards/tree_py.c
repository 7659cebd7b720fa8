/* guards/tree_py.c — the guard tree seen from outside the walk: its Python
 * views (_C.tree_info / tree_stats through gtree_info, gtree_stats), the
 * depth-first visit telemetry publishes it with (gtree_visit), the user
 * text of a property (gtree_property_text), the
 * MISSING and dead marker objects, and the binding of node counters to the telemetry
 * region (gtree_bind_counters).  Nothing here runs per call.
 */
#include "tree_int.h"   /* the tree's types; tree.h */

Py_ssize_t gtree_bound_alive;

/* Node.ctr[i] is called ctr_names[i] in tree_info and in the telemetry
 * region's COUNTERS blob (GTREE_NODE_COUNTERS u64 per node, in this order). */
static const char *const ctr_names[GTREE_NODE_COUNTERS] = {
    "evaluations", "failures", "timed", "timed_ns",
};

/* GTree.slot_ctr's per-slot counters, named as in gtree_slots and
 * exported as TREE_SLOT_COUNTERS. */
static const char *const slot_ctr_names[GTREE_SLOT_COUNTERS] = {"timed", "timed_ns", "max_ns"};

/* ---- Python views -------------------------------------------------------------- */

/* (source, property, expected) of test x. */
static PyObject *
test_info(const GTree *t, int x)
{
    const Test *test = &t->tests[x];
    return Py_BuildValue("(ONN)", t->sources[t->keys[test->key].src].spec,
                         property_text(t, test), expected_obj(t, test));
}

static PyObject *
test_list(const GTree *t, const int *xs, int n)
{
    PyObject *list = PyList_New(n);
    for (int i = 0; list != NULL && i < n; i++) {
        PyObject *item = test_info(t, xs[i]);
        if (item == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *
node_info(const GTree *t, const Node *n)
{
    if (n == NULL)
        Py_RETURN_NONE;
    PyObject *d = Py_BuildValue("{s:N,s:K,s:K,s:K,s:K,s:i}",
                                "tests", test_list(t, n->tests, n->ntests),
                                ctr_names[0], (unsigned long long)ctr_read(&n->ctr[0]),
                                ctr_names[1], (unsigned long long)ctr_read(&n->ctr[1]),
                                ctr_names[2], (unsigned long long)ctr_read(&n->ctr[2]),
                                ctr_names[3], (unsigned long long)ctr_read(&n->ctr[3]),
                                "newest", n->newest);
    if (d == NULL)
        return NULL;
    PyObject *sw = Py_None, *branches = NULL, *leaf = NULL, *deflt = NULL;
    if (n->key >= 0) {
        const Key *k = &t->keys[n->key];
        Test probe = {.key = n->key};
        sw = Py_BuildValue("(ON)", t->sources[k->src].spec, property_text(t, &probe));
        branches = PyList_New(0);
        for (int i = 0; sw != NULL && branches != NULL && i < n->nbranch; i++) {
            probe.bits = n->bits[i];
            probe.obj = n->vals[i];
            probe.entry = n->child[i]->newest;  /* its set holds the value too */
            PyObject *item = Py_BuildValue("(NN)", expected_obj(t, &probe),
                                           node_info(t, n->child[i]));
            if (item == NULL || PyList_Append(branches, item) < 0)
                Py_CLEAR(branches);
            Py_XDECREF(item);
        }
        deflt = node_info(t, n->deflt);
    }
    else {
        Py_INCREF(sw);
        branches = PyList_New(0);
        deflt = Py_NewRef(Py_None);
        leaf = PyList_New(0);
        for (int j = 0; leaf != NULL && j < n->nleaf; j++) {
            PyObject *item = Py_BuildValue("(OiN)", t->entries[n->leaf[j]].payload, n->leaf[j],
                                           test_list(t, n->leaf_tests + n->leaf_off[j],
                                                     n->leaf_off[j + 1] - n->leaf_off[j]));
            if (item == NULL || PyList_Append(leaf, item) < 0)
                Py_CLEAR(leaf);
            Py_XDECREF(item);
        }
    }
    if (leaf == NULL)
        leaf = n->key >= 0 ? Py_NewRef(Py_None) : NULL;
    if (sw == NULL || branches == NULL || deflt == NULL || leaf == NULL
            || PyDict_SetItemString(d, "switch", sw) < 0
            || PyDict_SetItemString(d, "branches", branches) < 0
            || PyDict_SetItemString(d, "default", deflt) < 0
            || PyDict_SetItemString(d, "leaf", leaf) < 0)
        Py_CLEAR(d);
    Py_XDECREF(sw);
    Py_XDECREF(branches);
    Py_XDECREF(deflt);
    Py_XDECREF(leaf);
    return d;
}

/* One slot of gtree_slots: (node, test, entry, guard, timed, timed_ns, max_ns). */
static PyObject *
slot_info(const GTree *t, int s)
{
    int x = t->slot_test[s], entry = -1, guard = -1;
    PyObject *test;
    if (x >= 0) {
        test = test_info(t, x);
        entry = t->tests[x].entry;
        guard = t->tests[x].guard;
    }
    else {                                          /* a switch: -1 - key */
        Test probe = {.key = -1 - x};
        test = Py_BuildValue("(ON)", t->sources[t->keys[probe.key].src].spec,
                             property_text(t, &probe));
    }
    const uint64_t *c = &t->slot_ctr[GTREE_SLOT_COUNTERS * (size_t)s];
    return test == NULL ? NULL
           : Py_BuildValue("(iNiiKKK)", t->slot_node[s], test, entry, guard,
                           (unsigned long long)ctr_read(&c[0]),
                           (unsigned long long)ctr_read(&c[1]),
                           (unsigned long long)ctr_read(&c[2]));
}

PyObject *
gtree_slots(const GTree *t)
{
    PyObject *list = PyList_New(t->nslots);
    for (int s = 0; list != NULL && s < t->nslots; s++) {
        PyObject *item = slot_info(t, s);
        if (item == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, s, item);
    }
    return list;
}

PyObject *
gtree_info(const GTree *t)
{
    PyObject *payloads = PyList_New(t->nentries);
    for (int i = 0; payloads != NULL && i < t->nentries; i++)
        PyList_SET_ITEM(payloads, i, Py_NewRef(t->entries[i].payload));
    return Py_BuildValue("{s:N,s:i,s:N,s:N}", "entries", payloads, "nodes", t->nnodes,
                         "root", node_info(t, t->root), "slots", gtree_slots(t));
}

/* ---- visit ------------------------------------------------------------------ */

typedef struct {
    const Node *node;
    const Node *parent;     /* NULL for the root */
    int parent_index, depth;
    int branch;             /* the parent's branch leading here; -1: its default */
} Pending;

/* The view of p's node into *v (new references in v's object fields), or
 * -1 with an exception. */
static int
node_view(const GTree *t, const Pending *p, GtreeNodeView *v)
{
    const Node *n = p->node;
    *v = (GtreeNodeView){.parent = p->parent_index, .depth = p->depth,
                         .via_default = p->parent != NULL && p->branch < 0,
                         .counters = {ctr_read(&n->ctr[0]), ctr_read(&n->ctr[1]),
                                      ctr_read(&n->ctr[2]), ctr_read(&n->ctr[3])},
                         .newest = n->newest};
    if (p->parent != NULL && p->branch >= 0) {
        Test probe = {.key = p->parent->key, .bits = p->parent->bits[p->branch],
                      .obj = p->parent->vals[p->branch],
                      .entry = n->newest};      /* its set holds the value too */
        if ((v->via = expected_obj(t, &probe)) == NULL)
            return -1;
    }
    if ((v->tests = test_list(t, n->tests, n->ntests)) == NULL)
        return -1;
    if (n->key >= 0) {
        Test probe = {.key = n->key};
        v->switch_on = Py_BuildValue("(ON)", t->sources[t->keys[n->key].src].spec,
                                     property_text(t, &probe));
        return v->switch_on != NULL ? 0 : -1;
    }
    if ((v->leaf = PyList_New(n->nleaf)) == NULL)
        return -1;
    for (int j = 0; j < n->nleaf; j++) {
        PyObject *item = Py_BuildValue("(OiN)", t->entries[n->leaf[j]].payload, n->leaf[j],
                                       test_list(t, n->leaf_tests + n->leaf_off[j],
                                                 n->leaf_off[j + 1] - n->leaf_off[j]));
        if (item == NULL)
            return -1;
        PyList_SET_ITEM(v->leaf, j, item);
    }
    return 0;
}

int
gtree_visit(const GTree *t, GtreeVisitor visit, void *ctx)
{
    if (t->root == NULL)
        return 0;
    /* Each node is pushed once: nnodes bounds the stack (no recursion). */
    Pending *stack = PyMem_Malloc((size_t)(t->nnodes > 0 ? t->nnodes : 1) * sizeof(Pending));
    if (stack == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int top = 0, index = 0, rc = 0;
    stack[top++] = (Pending){.node = t->root, .parent_index = -1};
    while (top > 0 && rc == 0) {
        Pending p = stack[--top];
        GtreeNodeView v;
        rc = node_view(t, &p, &v);
        v.index = index;
        if (rc == 0)
            rc = visit(ctx, &v);
        Py_XDECREF(v.via);
        Py_XDECREF(v.tests);
        Py_XDECREF(v.switch_on);
        Py_XDECREF(v.leaf);
        const Node *n = p.node;
        if (rc != 0 || n->key < 0) {
            index++;
            continue;
        }
        /* pushed last-first, so the first branch comes out next */
        int nchild = n->nbranch + (n->deflt != NULL);
        if (top + nchild > t->nnodes) {
            PyErr_SetString(PyExc_SystemError, "guard tree: more nodes than counted");
            rc = -1;
            break;
        }
        if (n->deflt != NULL)
            stack[top++] = (Pending){n->deflt, n, index, p.depth + 1, -1};
        for (int b = n->nbranch - 1; b >= 0; b--)
            stack[top++] = (Pending){n->child[b], n, index, p.depth + 1, b};
        index++;
    }
    PyMem_Free(stack);
    return rc;
}

/* ---- property texts ------------------------------------------------------------ */

/* How property p of a source reads to a user: "{}" stands for the source
 * (exported as TREE_PROPERTY_FORMS; prop_names' order). */
static const char *const prop_forms[NPROPS] = {
    "type({})", "id({})", "{} is None", "torch.is_grad_enabled()", "global torch state",
    "compile backend", "{}.same_object", "len({})", "{}.dtype", "{}.device", "{}.requires_grad",
    "{}.dispatch_keys", "{}.ndim", "{}.size()", "{}.stride()", "{}.same_storage", "{}",
    "{}.keys()", "shape relation over {}",
};

PyObject *
gtree_property_text(PyObject *src, PyObject *prop)
{
    Py_ssize_t len;
    const char *text = PyUnicode_AsUTF8AndSize(prop, &len);
    if (text == NULL || !PyUnicode_Check(src))
        return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_TypeError, "source text must be str");
    const char *bracket = strchr(text, '[');
    size_t name_len = bracket != NULL ? (size_t)(bracket - text) : (size_t)len;
    const char *rest = text + name_len;
    for (int p = 0; p < NPROPS; p++) {
        if (strlen(prop_names[p]) != name_len || memcmp(prop_names[p], text, name_len) != 0)
            continue;
        const char *hole = strstr(prop_forms[p], "{}");
        if (hole == NULL)
            return PyUnicode_FromFormat("%s%s", prop_forms[p], rest);
        PyObject *pre = PyUnicode_FromStringAndSize(prop_forms[p], hole - prop_forms[p]);
        PyObject *out = pre ? PyUnicode_FromFormat("%U%U%s%s", pre, src, hole + 2, rest) : NULL;
        Py_XDECREF(pre);
        return out;
    }
    return PyUnicode_FromFormat("%U.%U", src, prop);       /* a name of no table */
}

PyObject *
gtree_stats(const GTree *t)
{
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:i,s:i,s:i}",
                         "last_visited", (unsigned long long)t->visited_last,
                         "timed", (unsigned long long)t->timed,
                         "timed_ns", (unsigned long long)t->timed_ns,
                         "visited_total", (unsigned long long)t->visited_total,
                         "lookups", (unsigned long long)t->lookups,
                         "hits", (unsigned long long)t->hits,
                         "misses", (unsigned long long)t->misses,
                         "nodes", t->nnodes, "entries", t->nentries, "tests", t->ntests);
}

PyObject *
gtree_missing(void)
{
    return missing_obj;
}

/* repr of the two marker objects (guards.DEAD reads "<dead>" too). */
static PyObject *
missing_repr(PyObject *self)
{
    return PyUnicode_FromString(self == dead_obj ? "<dead>" : "<missing>");
}

static PyTypeObject MissingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dynamo._C.MissingType",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_repr = missing_repr,
    .tp_doc = "Markers of the tree's reports: <missing>, the `actual` value of a source that "
              "cannot be fetched; <dead>, the `expected` object of an ID/FUNCTION_MATCH "
              "that died.",
};

int
gtree_module_init(void)
{
    if (missing_obj != NULL)
        return 0;
    if (PyType_Ready(&MissingType) < 0)
        return -1;
    missing_obj = PyType_GenericNew(&MissingType, NULL, NULL);
    dead_obj = PyType_GenericNew(&MissingType, NULL, NULL);
    if (missing_obj == NULL || dead_obj == NULL) {
        Py_CLEAR(missing_obj);
        Py_CLEAR(dead_obj);
        return -1;
    }
    return 0;
}

/* ---- live counters ---------------------------------------------------------- */

/* Point the counters of n's subtree, depth-first from index *i, at
 * slots (GTREE_NODE_COUNTERS u64 per node), carrying their counts over. */
static void
bind_node(Node *n, uint64_t *slots, size_t nnodes, size_t *i)
{
    if (n == NULL)
        return;
    size_t k = (*i)++;
    if (k < nnodes) {
        uint64_t *to = &slots[GTREE_NODE_COUNTERS * k];
        for (int c = 0; c < GTREE_NODE_COUNTERS; c++)
            __atomic_store_n(&to[c], ctr_read(&n->ctr[c]), __ATOMIC_RELAXED);
        n->ctr = to;
    }
    if (n->key >= 0) {
        for (int b = 0; b < n->nbranch; b++)
            bind_node(n->child[b], slots, nnodes, i);
        bind_node(n->deflt, slots, nnodes, i);
    }
}

size_t
gtree_counter_words(const GTree *t)
{
    return GTREE_NODE_COUNTERS * (size_t)t->nnodes + GTREE_SLOT_COUNTERS * (size_t)t->nslots;
}

int
gtree_bind_counters(GTree *t, uint64_t *words, size_t nwords)
{
    if (t == NULL || words == NULL || nwords != gtree_counter_words(t))
        return 0;
    size_t i = 0, nnodes = (size_t)t->nnodes;
    bind_node(t->root, words, nnodes, &i);
    uint64_t *to = words + GTREE_NODE_COUNTERS * nnodes;    /* then the test slots */
    for (size_t k = 0; k < GTREE_SLOT_COUNTERS * (size_t)t->nslots; k++)
        __atomic_store_n(&to[k], ctr_read(&t->slot_ctr[k]), __ATOMIC_RELAXED);
    t->slot_ctr = to;
    if (!t->bound) {
        t->bound = 1;
        gtree_bound_alive++;
    }
    return 1;
}

/* ---- vocabulary ------------------------------------------------------------ */

/* New tuple of n C strings, or NULL with an exception. */
static PyObject *
str_tuple(const char *const *names, int n)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t != NULL && i < n; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (s == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

int
gtree_add_vocabulary(PyObject *module)
{
    PyObject *props = str_tuple(prop_names, NPROPS);
    PyObject *ctrs = str_tuple(ctr_names, GTREE_NODE_COUNTERS);
    PyObject *forms = PyDict_New();
    for (int p = 0; forms != NULL && p < NPROPS; p++) {
        PyObject *form = PyUnicode_FromString(prop_forms[p]);
        if (form == NULL || PyDict_SetItemString(forms, prop_names[p], form) < 0)
            Py_CLEAR(forms);
        Py_XDECREF(form);
    }
    int rc = props != NULL && ctrs != NULL && forms != NULL
             && PyModule_AddObjectRef(module, "TREE_PROPERTIES", props) == 0
             && PyModule_AddObjectRef(module, "TREE_PROPERTY_FORMS", forms) == 0
             && PyModule_AddObjectRef(module, "TREE_NODE_COUNTERS", ctrs) == 0 ? 0 : -1;
    PyObject *slot_ctrs = rc == 0 ? str_tuple(slot_ctr_names, GTREE_SLOT_COUNTERS) : NULL;
    if (slot_ctrs == NULL || PyModule_AddObjectRef(module, "TREE_SLOT_COUNTERS", slot_ctrs) < 0)
        rc = -1;
    Py_XDECREF(slot_ctrs);
    Py_XDECREF(props);
    Py_XDECREF(ctrs);
    Py_XDECREF(forms);
    return rc;
}
