/*
 * _passes: the model's per-event passes in C (schedwake/model/_passes.h says how
 * arrays come in).  Python keeps what the model means; a pass here is a loop over
 * rows that NumPy would do in several whole-array steps or not at all.
 */
#include "_passes.h"

static PyMethodDef methods[] = {
#define PASS(name, doc) {#name, pass_##name, METH_VARARGS, doc},
#include "_passes_list.h"
#undef PASS
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "_passes", "The model's per-event passes in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__passes(void)
{
    return PyModule_Create(&moddef);
}
