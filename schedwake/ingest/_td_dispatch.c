/*
 * _td_dispatch.c: which format a file is, and its open.  Each format is a sniff
 * (the file's first bytes are its own) and an open (the rest of td_open()); the
 * first whose sniff says yes opens the file, and a file no sniff claims is read as
 * a trace.dat, whose open says what is wrong with its magic bytes.  A new format
 * is a line in the table, and its own unit: no other unit needs to know it.
 */
#include "_td_internal.h"

typedef struct {
    const char *kind;               /* for messages: "perf.data" */
    int (*sniff)(const uint8_t *data, size_t size);
    int (*open)(td_file *f);
} Format;

static const Format FORMATS[] = {
    {"perf.data", perf_sniff, perf_open},
};

static const Format DEFAULT_FORMAT = {"trace.dat", NULL, tracedat_open};

int open_format(td_file *f)
{
    const Format *fmt = &DEFAULT_FORMAT;
    for (size_t i = 0; i < sizeof(FORMATS) / sizeof(FORMATS[0]); i++)
        if (FORMATS[i].sniff(f->data, f->size)) {
            fmt = &FORMATS[i];
            break;
        }
    f->kind = fmt->kind;
    return fmt->open(f);
}
