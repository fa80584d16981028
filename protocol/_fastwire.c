/* Native fast path for decoding experience frames (see protocol/codec.py, `decode`).
 *
 * Experience batches are nearly all the learner receives, and unpacking them
 * into Python dicts before checking them cost more than the checks. This
 * reads the msgpack bytes directly and accepts only a well-formed experience
 * message in the encodings packers commonly write. It never rejects: for
 * anything else (another kind, an unknown or repeated key, a signed or
 * negative integer where a count belongs, a bad length, a NaN, invalid UTF-8,
 * trailing bytes, h0/c0) it returns None, and the Python decoder, which is the
 * reference, validates the frame and names the fault. Tests compare the two
 * on fuzzed frames.
 *
 * It uses only the CPython API (no numpy headers): the float arrays come back
 * as one bytes object, obs | next_obs | action | reward, which the caller
 * views with np.frombuffer.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} Reader;

/* Big-endian unsigned integer of `size` bytes; 0 when the frame ends first. */
static int read_be(Reader *r, int size, uint64_t *out)
{
    if (r->end - r->p < size)
        return 0;
    uint64_t v = 0;
    for (int i = 0; i < size; i++)
        v = (v << 8) | r->p[i];
    r->p += size;
    *out = v;
    return 1;
}

static int read_byte(Reader *r, uint8_t *out)
{
    if (r->p >= r->end)
        return 0;
    *out = *r->p++;
    return 1;
}

/* A non-negative integer in any msgpack int format. Negative values fail: the
 * schema path rejects them with a reason this code does not name. */
static int read_uint(Reader *r, uint64_t *out)
{
    uint8_t tag;
    uint64_t v;
    if (!read_byte(r, &tag))
        return 0;
    if (tag <= 0x7f) {
        *out = tag;
        return 1;
    }
    if (tag >= 0xcc && tag <= 0xcf) {  /* uint8 .. uint64 */
        return read_be(r, 1 << (tag - 0xcc), out);
    }
    if (tag >= 0xd0 && tag <= 0xd3) {  /* int8 .. int64 */
        int size = 1 << (tag - 0xd0);
        if (!read_be(r, size, &v) || (v >> (8 * size - 1)) & 1)
            return 0;
        *out = v;
        return 1;
    }
    return 0;
}

/* Length of a msgpack str, bin, array or map header whose fixed form holds
 * lengths below `fix_limit` under tags fix_base.. and whose 8/16/32-bit forms
 * start at tag `sized` (any of them may be absent: pass 0). */
static int read_len(Reader *r, uint8_t fix_base, uint8_t fix_limit, uint8_t sized8, uint8_t sized16, uint64_t *out)
{
    uint8_t tag;
    if (!read_byte(r, &tag))
        return 0;
    if (fix_limit && tag >= fix_base && tag < fix_base + fix_limit) {
        *out = tag - fix_base;
        return 1;
    }
    if (sized8 && tag == sized8)
        return read_be(r, 1, out);
    if (sized16 && tag == sized16)
        return read_be(r, 2, out);
    if (sized16 && tag == sized16 + 1)
        return read_be(r, 4, out);
    return 0;
}

static int read_str(Reader *r, const char **s, uint64_t *len)
{
    if (!read_len(r, 0xa0, 32, 0xd9, 0xda, len) || *len > (uint64_t)(r->end - r->p))
        return 0;
    *s = (const char *)r->p;
    r->p += *len;
    return 1;
}

static int read_bin(Reader *r, const uint8_t **data, uint64_t *len)
{
    if (!read_len(r, 0, 0, 0xc4, 0xc5, len) || *len > (uint64_t)(r->end - r->p))
        return 0;
    *data = r->p;
    r->p += *len;
    return 1;
}

static int read_map_len(Reader *r, uint64_t *len) { return read_len(r, 0x80, 16, 0, 0xde, len); }
static int read_array_len(Reader *r, uint64_t *len) { return read_len(r, 0x90, 16, 0, 0xdc, len); }

static int str_is(const char *s, uint64_t len, const char *want)
{
    return len == strlen(want) && memcmp(s, want, len) == 0;
}

static int read_float(Reader *r, double *out)
{
    uint8_t tag;
    uint64_t bits;
    if (!read_byte(r, &tag))
        return 0;
    if (tag == 0xca) {
        float f;
        uint32_t b32;
        if (!read_be(r, 4, &bits))
            return 0;
        b32 = (uint32_t)bits;
        memcpy(&f, &b32, 4);
        *out = f;
        return 1;
    }
    if (tag == 0xcb) {
        if (!read_be(r, 8, &bits))
            return 0;
        memcpy(out, &bits, 8);
        return 1;
    }
    return 0;
}

/* One wire array: a map of exactly dtype, shape and data. */
typedef struct {
    int is_bool;
    int ndim;
    uint64_t shape[2];
    const uint8_t *data;
    uint64_t len;
} WireArray;

static int read_dtype(Reader *r, WireArray *a)
{
    const char *s;
    uint64_t n;
    if (!read_str(r, &s, &n))
        return 0;
    if (str_is(s, n, "f32"))
        a->is_bool = 0;
    else if (str_is(s, n, "bool"))
        a->is_bool = 1;
    else
        return 0;
    return 1;
}

static int read_shape(Reader *r, WireArray *a)
{
    uint64_t ndim;
    if (!read_array_len(r, &ndim) || ndim < 1 || ndim > 2)
        return 0;
    a->ndim = (int)ndim;
    for (int i = 0; i < a->ndim; i++)
        if (!read_uint(r, &a->shape[i]))
            return 0;
    return 1;
}

static int read_array(Reader *r, WireArray *a)
{
    uint64_t entries;
    unsigned seen = 0;
    memset(a, 0, sizeof *a);
    if (!read_map_len(r, &entries) || entries != 3)
        return 0;
    for (int i = 0; i < 3; i++) {
        const char *key;
        uint64_t klen;
        unsigned bit;
        int ok;
        if (!read_str(r, &key, &klen))
            return 0;
        if (str_is(key, klen, "dtype"))
            bit = 1, ok = read_dtype(r, a);
        else if (str_is(key, klen, "shape"))
            bit = 2, ok = read_shape(r, a);
        else if (str_is(key, klen, "data"))
            bit = 4, ok = read_bin(r, &a->data, &a->len);
        else
            return 0;
        if (!ok || (seen & bit))
            return 0;
        seen |= bit;
    }
    return 1;
}

enum {
    K_V, K_KIND, K_SENDER, K_SEQ, K_BOT, K_EPISODE, K_T0, K_VERSION,
    K_OBS, K_ACTION, K_REWARD, K_NEXT_OBS, K_TERMINATED, K_TRUNCATED,
    K_PREV_ACTION, K_PREV_REWARD, K_COUNT
};
static const char *const KEYS[K_COUNT] = {
    "v", "kind", "sender", "seq", "bot", "episode", "t0", "version",
    "obs", "action", "reward", "next_obs", "terminated", "truncated",
    "prev_action", "prev_reward",
};
#define REQUIRED ((1u << K_PREV_ACTION) - 1)
#define FIRST_ARRAY K_OBS

typedef struct {
    uint64_t uints[K_VERSION + 1];  /* v, seq, episode, t0, version by key index */
    const char *strs[K_VERSION + 1];
    uint64_t str_lens[K_VERSION + 1];
    WireArray arrays[K_PREV_ACTION - FIRST_ARRAY + 1];  /* obs .. prev_action */
    double prev_reward;
    unsigned seen;
} Fields;

static WireArray *array_of(Fields *f, int key) { return &f->arrays[key - FIRST_ARRAY]; }

static int read_value(Reader *r, Fields *f, int key)
{
    switch (key) {
    case K_KIND: case K_SENDER: case K_BOT:
        return read_str(r, &f->strs[key], &f->str_lens[key]);
    case K_V: case K_SEQ: case K_EPISODE: case K_T0: case K_VERSION:
        return read_uint(r, &f->uints[key]);
    case K_PREV_REWARD:
        return read_float(r, &f->prev_reward) && isfinite(f->prev_reward);
    default:
        return read_array(r, array_of(f, key));
    }
}

static int read_fields(Reader *r, Fields *f)
{
    uint64_t entries;
    f->seen = 0;
    if (!read_map_len(r, &entries) || entries > K_COUNT)
        return 0;
    for (uint64_t i = 0; i < entries; i++) {
        const char *key;
        uint64_t klen;
        int k = 0;
        if (!read_str(r, &key, &klen))
            return 0;
        while (k < K_COUNT && !str_is(key, klen, KEYS[k]))
            k++;
        if (k == K_COUNT || (f->seen & (1u << k)) || !read_value(r, f, k))
            return 0;
        f->seen |= 1u << k;
    }
    return r->p == r->end && (f->seen & REQUIRED) == REQUIRED;
}

/* Bytes of a float32 array of a x b items, or 0 if that overflows. */
static uint64_t f32_bytes(uint64_t a, uint64_t b)
{
    uint64_t out;
    if (__builtin_mul_overflow(a, b, &out) || __builtin_mul_overflow(out, 4, &out))
        return 0;
    return out;
}

static int shapes_agree(Fields *f, uint64_t max_steps, uint64_t max_dim, uint64_t *n, uint64_t *d, uint64_t *k)
{
    WireArray *o = array_of(f, K_OBS), *no = array_of(f, K_NEXT_OBS), *a = array_of(f, K_ACTION);
    WireArray *rw = array_of(f, K_REWARD), *te = array_of(f, K_TERMINATED), *tr = array_of(f, K_TRUNCATED);
    if (o->is_bool || no->is_bool || a->is_bool || rw->is_bool || !te->is_bool || !tr->is_bool)
        return 0;
    if (o->ndim != 2 || no->ndim != 2 || a->ndim != 2 || rw->ndim != 1 || te->ndim != 1 || tr->ndim != 1)
        return 0;
    *n = o->shape[0], *d = o->shape[1], *k = a->shape[1];
    if (*n < 1 || *n > max_steps || *d < 1 || *d > max_dim || *k < 1 || *k > max_dim)
        return 0;
    if (no->shape[0] != *n || no->shape[1] != *d || a->shape[0] != *n || rw->shape[0] != *n
        || te->shape[0] != *n || tr->shape[0] != *n)
        return 0;
    uint64_t obs_bytes = f32_bytes(*n, *d), act_bytes = f32_bytes(*n, *k);
    if (!obs_bytes || !act_bytes || o->len != obs_bytes || no->len != obs_bytes || a->len != act_bytes
        || rw->len != f32_bytes(*n, 1) || te->len != *n || tr->len != *n)
        return 0;
    if (f->seen & (1u << K_PREV_ACTION)) {
        WireArray *pa = array_of(f, K_PREV_ACTION);
        if (pa->is_bool || pa->ndim != 1 || pa->shape[0] != *k || pa->len != f32_bytes(*k, 1))
            return 0;
    }
    return 1;
}

/* Bool bytes are 0 or 1, and only the last step of a batch may end the episode. */
static int flags_ok(const WireArray *a)
{
    for (uint64_t i = 0; i + 1 < a->len; i++)
        if (a->data[i])
            return 0;
    return a->data[a->len - 1] <= 1;
}

/* No NaN or infinity: a float32 is finite unless its exponent bits are all set. */
static int all_finite(const char *data, Py_ssize_t len)
{
    uint32_t bad = 0;
    for (Py_ssize_t i = 0; i + 4 <= len; i += 4) {
        uint32_t u;
        memcpy(&u, data + i, 4);
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    return !bad;
}

/* A checked string: valid UTF-8 and 1..max_str code points, else NULL with no error set. */
static PyObject *checked_str(Fields *f, int key, uint64_t max_str)
{
    PyObject *s = PyUnicode_DecodeUTF8(f->strs[key], (Py_ssize_t)f->str_lens[key], NULL);
    if (s == NULL) {
        PyErr_Clear();
        return NULL;
    }
    Py_ssize_t len = PyUnicode_GET_LENGTH(s);
    if (len < 1 || (uint64_t)len > max_str) {
        Py_DECREF(s);
        return NULL;
    }
    return s;
}

/* The float arrays joined in the order the caller views them, or NULL (no error set) if any is not finite. */
static PyObject *joined_floats(Fields *f)
{
    static const int order[] = {K_OBS, K_NEXT_OBS, K_ACTION, K_REWARD};
    uint64_t total = 0;
    for (int i = 0; i < 4; i++)
        total += array_of(f, order[i])->len;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (out == NULL)
        return NULL;
    char *dst = PyBytes_AS_STRING(out);
    for (int i = 0; i < 4; i++) {
        WireArray *a = array_of(f, order[i]);
        memcpy(dst, a->data, a->len);
        dst += a->len;
    }
    if (!all_finite(PyBytes_AS_STRING(out), (Py_ssize_t)total)) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* prev_action (finite float32 bytes) and prev_reward when present; 0 if prev_action is not finite
 * or memory runs out (the caller tells the two apart by PyErr_Occurred). */
static int optional_fields(Fields *f, PyObject **prev_action, PyObject **prev_reward)
{
    *prev_action = *prev_reward = NULL;
    if (f->seen & (1u << K_PREV_ACTION)) {
        WireArray *pa = array_of(f, K_PREV_ACTION);
        if (!all_finite((const char *)pa->data, (Py_ssize_t)pa->len))
            return 0;
        *prev_action = PyBytes_FromStringAndSize((const char *)pa->data, (Py_ssize_t)pa->len);
        if (*prev_action == NULL)
            return 0;
    }
    if (f->seen & (1u << K_PREV_REWARD)) {
        *prev_reward = PyFloat_FromDouble(f->prev_reward);
        if (*prev_reward == NULL)
            return 0;
    }
    return 1;
}

/* The result tuple, or NULL: with an error set only when memory ran out. */
static PyObject *build_result(Fields *f, uint64_t n, uint64_t d, uint64_t k, uint64_t max_str)
{
    PyObject *sender, *bot = NULL, *floats = NULL, *prev_action = NULL, *prev_reward = NULL, *result = NULL;
    sender = checked_str(f, K_SENDER, max_str);
    bot = sender ? checked_str(f, K_BOT, max_str) : NULL;
    floats = bot ? joined_floats(f) : NULL;
    if (floats && optional_fields(f, &prev_action, &prev_reward))
        result = Py_BuildValue(
            "(OKOKKKKKKOOOOO)", sender, (unsigned long long)f->uints[K_SEQ], bot,
            (unsigned long long)f->uints[K_EPISODE], (unsigned long long)f->uints[K_T0],
            (unsigned long long)f->uints[K_VERSION], (unsigned long long)n, (unsigned long long)d,
            (unsigned long long)k, floats,
            array_of(f, K_TERMINATED)->data[n - 1] ? Py_True : Py_False,
            array_of(f, K_TRUNCATED)->data[n - 1] ? Py_True : Py_False,
            prev_action ? prev_action : Py_None, prev_reward ? prev_reward : Py_None);
    Py_XDECREF(sender);
    Py_XDECREF(bot);
    Py_XDECREF(floats);
    Py_XDECREF(prev_action);
    Py_XDECREF(prev_reward);
    return result;
}

PyDoc_STRVAR(experience_doc,
"experience(frame, version, max_steps, max_dim, max_str) -> tuple | None\n\n"
"The fields of a valid experience frame: (sender, seq, bot, episode, t0, version,\n"
"n, obs_dim, act_dim, floats, terminated_last, truncated_last, prev_action, prev_reward),\n"
"where floats is obs | next_obs | action | reward as float32 bytes and prev_action is\n"
"float32 bytes or None. None for any frame this path does not accept.");

static PyObject *experience(PyObject *self, PyObject *args)
{
    Py_buffer frame;
    unsigned long long version, max_steps, max_dim, max_str;
    Fields f;
    uint64_t n, d, k;
    PyObject *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*KKKK", &frame, &version, &max_steps, &max_dim, &max_str))
        return NULL;
    Reader r = {(const uint8_t *)frame.buf, (const uint8_t *)frame.buf + frame.len};
    if (read_fields(&r, &f) && f.uints[K_V] == version && str_is(f.strs[K_KIND], f.str_lens[K_KIND], "experience")
        && shapes_agree(&f, max_steps, max_dim, &n, &d, &k)
        && flags_ok(array_of(&f, K_TERMINATED)) && flags_ok(array_of(&f, K_TRUNCATED)))
        result = build_result(&f, n, d, k, max_str);
    PyBuffer_Release(&frame);
    if (result == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return result;
}

static PyMethodDef methods[] = {
    {"experience", experience, METH_VARARGS, experience_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "protocol._fastwire",
    "Native fast path for decoding experience frames; protocol.codec falls back to Python without it.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastwire(void) { return PyModule_Create(&module); }
