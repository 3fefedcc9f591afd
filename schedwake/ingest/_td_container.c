/*
 * _td_container.c: a file's life through the interface (_tdcore.h): td_open()
 * makes the file's state and hands it to its format (_td_dispatch.c: trace.dat or
 * perf.data), td_close() frees it, whatever the format (its own state through
 * f->src), and td_fuzz_read() is open, decode all, close in one call.
 *
 * (Why our own reader and not libtracecmd, and the safety rules every unit
 * follows: _td_tracedat.c's head.)
 */
#include "_td_internal.h"

int td_open(td_file **out, const uint8_t *data, size_t size, char *err)
{
    *out = NULL;
    err[0] = 0;
    td_file *f = calloc(1, sizeof(*f));
    if (!f)
        return seterr(err, "out of memory"), TD_FAIL;
    f->data = data;
    f->size = size;
    f->err = err;
    f->kind = "trace.dat";
    *out = f;
    if (size == 0)
        return seterr(err, "empty file"), TD_FAIL;
    return open_format(f);
}

void td_data_is_file_mapping(td_file *f)
{
    f->file_mapping = 1;
}

void td_no_empty_tables(td_file *f)
{
    f->no_empty_tables = 1;
}

void td_close(td_file *f)
{
    if (!f)
        return;
    if (f->src)
        f->src->file_free(f);
    for (int e = 0; e < f->nevents; e++)
        free_columns(f->events[e].cols, f->events[e].ncols);
    for (size_t i = 0; i < f->nowned; i++)
        free(f->owned[i]);
    free(f->owned);
    free(f->events);
    free(f->info);
    free(f->by_id);
    free(f->buffers);
    free(f->warnings);
    buf_free(&f->options);
    buf_free(&f->cpustats);
    buf_free(&f->meta.lost_ts);
    buf_free(&f->meta.lost_cpu);
    buf_free(&f->meta.lost_count);
    free(f);
}

int td_fuzz_read(const uint8_t *data, size_t size, int jobs, char *err)
{
    td_file *f;
    int rc = td_open(&f, data, size, err);
    if (rc == 0) {
        td_want_all(f, 1);
        rc = td_decode(f, jobs, NULL, NULL, err);
    }
    td_close(f);
    return rc;
}
