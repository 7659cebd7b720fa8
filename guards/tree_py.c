/* guards/tree_py.c — the guard tree seen from outside the walk: its Python
 * views (_C.tree_info / tree_stats through gtree_info, gtree_stats), the
 * MISSING marker object, and the binding of node counters to the telemetry
 * region (gtree_bind_counters).  Nothing here runs per call.
 */
#include "tree_int.h"   /* the tree's types; tree.h */

Py_ssize_t gtree_bound_alive;

/* Node.ctr[i] is called ctr_names[i] in tree_info and in the telemetry
 * region's COUNTERS blob (u64 pairs, in this order). */
static const char *const ctr_names[2] = {"evaluations", "failures"};

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
    PyObject *d = Py_BuildValue("{s:N,s:K,s:K,s:i}", "tests", test_list(t, n->tests, n->ntests),
                                ctr_names[0], (unsigned long long)ctr_read(&n->ctr[0]),
                                ctr_names[1], (unsigned long long)ctr_read(&n->ctr[1]),
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

PyObject *
gtree_info(const GTree *t)
{
    PyObject *payloads = PyList_New(t->nentries);
    for (int i = 0; payloads != NULL && i < t->nentries; i++)
        PyList_SET_ITEM(payloads, i, Py_NewRef(t->entries[i].payload));
    return Py_BuildValue("{s:N,s:i,s:N}", "entries", payloads, "nodes", t->nnodes,
                         "root", node_info(t, t->root));
}

PyObject *
gtree_stats(const GTree *t)
{
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:i,s:i,s:i}",
                         "last_visited", (unsigned long long)t->visited_last,
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

/* repr of the missing marker object. */
static PyObject *
missing_repr(PyObject *self)
{
    return PyUnicode_FromString("<missing>");
}

static PyTypeObject MissingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dynamo._C.MissingType",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_repr = missing_repr,
    .tp_doc = "The `actual` value reported for a source that cannot be fetched.",
};

int
gtree_module_init(void)
{
    if (missing_obj != NULL)
        return 0;
    if (PyType_Ready(&MissingType) < 0)
        return -1;
    missing_obj = PyType_GenericNew(&MissingType, NULL, NULL);
    return missing_obj == NULL ? -1 : 0;
}

/* ---- live counters ---------------------------------------------------------- */

/* Point the counters of n's subtree, depth-first from index *i, at
 * slots (u64 pairs), carrying their counts over. */
static void
bind_node(Node *n, uint64_t *slots, size_t npairs, size_t *i)
{
    if (n == NULL)
        return;
    size_t k = (*i)++;
    if (k < npairs) {
        uint64_t *to = &slots[2 * k];
        __atomic_store_n(&to[0], ctr_read(&n->ctr[0]), __ATOMIC_RELAXED);
        __atomic_store_n(&to[1], ctr_read(&n->ctr[1]), __ATOMIC_RELAXED);
        n->ctr = to;
    }
    if (n->key >= 0) {
        for (int b = 0; b < n->nbranch; b++)
            bind_node(n->child[b], slots, npairs, i);
        bind_node(n->deflt, slots, npairs, i);
    }
}

int
gtree_bind_counters(GTree *t, uint64_t *slots, size_t npairs)
{
    if (t == NULL || slots == NULL || npairs != (size_t)t->nnodes)
        return 0;
    size_t i = 0;
    bind_node(t->root, slots, npairs, &i);
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
    PyObject *ctrs = str_tuple(ctr_names, 2);
    int rc = props != NULL && ctrs != NULL
             && PyModule_AddObjectRef(module, "TREE_PROPERTIES", props) == 0
             && PyModule_AddObjectRef(module, "TREE_NODE_COUNTERS", ctrs) == 0 ? 0 : -1;
    Py_XDECREF(props);
    Py_XDECREF(ctrs);
    return rc;
}
